// Observers: AVAudioRecorder's and AVAudioPlayer's metering calls (enable, update, average and peak power) on a LevelMeter.

/// The metering calls `AVAudioRecorder` and `AVAudioPlayer` share — `isMeteringEnabled`,
/// `updateMeters()`, `averagePower(forChannel:)`, `peakPower(forChannel:)` — on a
/// ``LevelMeter`` installed on one output element while metering is on. Readings are dBFS
/// (τ = 0.3 s average, 1.5 s peak hold; ``LevelMeter/silence``, −160, for silence, before the
/// first update, with metering off, or for a channel the element lacks).
/// Thread: control thread (it installs and removes the meter).
final class PowerMetering {
    let graph: AudioGraph
    let node: AUNode
    let element: AudioUnitElement
    private var meter: LevelMeter?
    private var readings: [(average: Float, peak: Float)] = []

    init(graph: AudioGraph, node: AUNode, element: AudioUnitElement) {
        self.graph = graph
        self.node = node
        self.element = element
    }

    /// Whether a meter is installed (setting true installs one; a node that cannot be metered
    /// leaves it false).
    var isEnabled: Bool {
        get { meter != nil }
        set {
            if newValue, meter == nil { meter = try? graph.installLevelMeter(on: node, element: element) }
            if !newValue { remove() }
        }
    }

    /// Takes the meter's current readings for the next ``averagePower(_:)`` and ``peakPower(_:)``.
    func update() {
        guard let meter else { return }
        readings = (0..<meter.channelCount).map { c in (try? meter.levels(channel: c)) ?? (LevelMeter.silence, LevelMeter.silence) }
    }

    func averagePower(_ channel: Int) -> Float {
        channel >= 0 && channel < readings.count ? readings[channel].average : LevelMeter.silence
    }

    func peakPower(_ channel: Int) -> Float {
        channel >= 0 && channel < readings.count ? readings[channel].peak : LevelMeter.silence
    }

    /// Removes the meter (readings back to silence).
    func remove() {
        if let meter { try? graph.removeLevelMeter(meter) }
        meter = nil
        readings = []
    }
}
