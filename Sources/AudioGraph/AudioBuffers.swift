/// A mutable view of non-interleaved Float32 audio: `[channel][frame]`, the layout every unit
/// renders in. The `AudioBufferList` analogue for the engine's canonical format.
///
/// The view does not own memory; it is valid only for the duration of the call that hands it out
/// (a render callback, an input callback, an offline render). Thread: whoever holds it.
public struct AudioBufferList: @unchecked Sendable {
    /// One pointer per channel, each to `frameCount` samples.
    public let channelPointers: UnsafePointer<UnsafeMutablePointer<Float>>
    /// Channels, 1…64.
    public let channelCount: Int
    /// Frames per channel in this slice, 0…MaximumFramesPerSlice.
    public let frameCount: Int

    /// Wraps existing channel buffers.
    /// - Parameters:
    ///   - channelPointers: `channelCount` pointers, each to at least `frameCount` floats.
    ///   - channelCount: number of channels.
    ///   - frameCount: frames per channel.
    @_noLocks
    public init(channelPointers: UnsafePointer<UnsafeMutablePointer<Float>>, channelCount: Int, frameCount: Int) {
        self.channelPointers = channelPointers
        self.channelCount = channelCount
        self.frameCount = frameCount
    }

    /// The samples of one channel, `frameCount` long. `channel` must be in `0..<channelCount`.
    @_noLocks @inline(__always)
    public subscript(channel: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: channelPointers[channel], count: frameCount)
    }
}

/// When a slice is rendered. Mirrors the parts of `AudioTimeStamp` the engine fills in.
public struct AudioTimeStamp: Sendable, Equatable {
    /// Frames rendered by the graph since it started, counted at the graph's sample rate.
    public var sampleTime: Double
    /// Creates a time stamp at a sample time.
    @_noLocks
    public init(sampleTime: Double) { self.sampleTime = sampleTime }
}

/// Supplies audio for an input element when it is pulled; the `AURenderCallback` analogue.
///
/// Called on the render thread once per slice with the element number and a buffer list in the
/// element's stream format (Float32 non-interleaved) to fill. It must follow the real-time rules:
/// no allocation, locks, I/O or waiting (see Docs/RealTimeRules.md). Return 0 on success; any
/// other value makes the engine render silence for that element and count a render error.
public typealias RenderCallback = @Sendable (_ timeStamp: AudioTimeStamp, _ element: AudioUnitElement, _ buffers: AudioBufferList) -> Int32

/// Notifies that device input is ready; the input-callback analogue of
/// `kAudioOutputUnitProperty_SetInputCallback`.
///
/// Called on the render thread at the start of each slice with the microphone (IO element 1)
/// audio in the application-side format. The buffers are read-only for the callback: copy what
/// you need (the `AudioUnitRender` step). Same real-time rules as ``RenderCallback``.
public typealias InputCallback = @Sendable (_ timeStamp: AudioTimeStamp, _ buffers: AudioBufferList) -> Void
