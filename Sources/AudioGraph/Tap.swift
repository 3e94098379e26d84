final class TapCore: @unchecked Sendable {
    @_noLocks
    func write(channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int, frames: Int,
               sampleRate: Double, sampleTime: Double) {}
}
