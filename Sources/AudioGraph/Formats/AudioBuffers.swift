// Formats: AudioBufferList, AudioTimeStamp and the callback types that see them.

/// A mutable view of one slice of audio in an element's stream format: the `AudioBufferList`
/// analogue.
///
/// In the engine's canonical format (Float32 non-interleaved) there is one buffer per channel,
/// read and written through ``subscript(_:)`` / ``channelPointers``. An element given another
/// format (Int16 or Int32, or interleaved) hands its callback buffers in that format instead:
/// ``bufferCount`` buffers (one per channel non-interleaved, one interleaved `[frame][channel]`
/// buffer otherwise), reached through ``int16Samples(_:)``, ``int32Samples(_:)``,
/// ``floatSamples(_:)`` or ``rawBuffer(_:)``.
///
/// The view does not own memory; it is valid only for the duration of the call that hands it out
/// (a render callback, an input callback, an offline render). Thread: whoever holds it.
/// SAFETY (`@unchecked Sendable`): a view of buffers owned by the render cycle; the callback rules say which thread may touch them, and when.
public struct AudioBufferList: @unchecked Sendable {
    /// One pointer per channel, each to `frameCount` samples. Meaningful only when
    /// ``isCanonical``; otherwise it is ``buffers`` seen as floats (use the typed accessors).
    public let channelPointers: UnsafePointer<UnsafeMutablePointer<Float>>
    /// Channels, 1…64.
    public let channelCount: Int
    /// Frames per channel in this slice, 0…MaximumFramesPerSlice (at the element's rate).
    public let frameCount: Int
    /// The buffers: ``bufferCount`` pointers, each to ``bytesPerFrame`` × ``frameCount`` bytes.
    public let buffers: UnsafePointer<UnsafeMutableRawPointer>
    /// 1 for an interleaved format, ``channelCount`` otherwise.
    public let bufferCount: Int
    /// Bytes per frame of one buffer (`StreamFormat.bytesPerFrame`).
    public let bytesPerFrame: Int
    /// Whether the buffers hold Float32 non-interleaved samples (``subscript(_:)`` works).
    public let isCanonical: Bool

    /// Wraps existing Float32 non-interleaved channel buffers.
    /// - Parameters:
    ///   - channelPointers: `channelCount` pointers, each to at least `frameCount` floats.
    ///   - channelCount: number of channels.
    ///   - frameCount: frames per channel.
    @_noLocks
    public init(channelPointers: UnsafePointer<UnsafeMutablePointer<Float>>, channelCount: Int, frameCount: Int) {
        self.channelPointers = channelPointers
        self.channelCount = channelCount
        self.frameCount = frameCount
        self.buffers = UnsafeRawPointer(channelPointers).assumingMemoryBound(to: UnsafeMutableRawPointer.self)
        self.bufferCount = channelCount
        self.bytesPerFrame = 4
        self.isCanonical = true
    }

    /// Wraps raw buffers in a format described by `layout` (internal: callbacks in
    /// non-canonical formats).
    @_noLocks
    init(raw: UnsafePointer<UnsafeMutableRawPointer>, layout: RawLayout, bytesPerFrame: Int, frameCount: Int) {
        self.buffers = raw
        self.channelPointers = UnsafeRawPointer(raw).assumingMemoryBound(to: UnsafeMutablePointer<Float>.self)
        self.channelCount = layout.channels
        self.bufferCount = layout.interleaved ? 1 : layout.channels
        self.bytesPerFrame = bytesPerFrame
        self.frameCount = frameCount
        var float = false
        if case .float32 = layout.kind { float = true }
        self.isCanonical = float && !layout.interleaved
    }

    /// The samples of one channel, `frameCount` long. Canonical format only; `channel` must be
    /// in `0..<channelCount`.
    @_noLocks @inline(__always)
    public subscript(channel: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: channelPointers[channel], count: frameCount)
    }

    /// The bytes of buffer `index` (0..<``bufferCount``): ``bytesPerFrame`` × ``frameCount``.
    @_noLocks @inline(__always)
    public func rawBuffer(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: buffers[index], count: bytesPerFrame &* frameCount)
    }

    /// Buffer `index` as 16-bit samples (for an Int16 format): `frameCount` samples per buffer,
    /// times ``channelCount`` when interleaved.
    @_noLocks @inline(__always)
    public func int16Samples(_ index: Int) -> UnsafeMutableBufferPointer<Int16> {
        UnsafeMutableBufferPointer(start: buffers[index].assumingMemoryBound(to: Int16.self), count: bytesPerFrame / 2 &* frameCount)
    }

    /// Buffer `index` as 32-bit integer samples (for an Int32 format); counts as for ``int16Samples(_:)``.
    @_noLocks @inline(__always)
    public func int32Samples(_ index: Int) -> UnsafeMutableBufferPointer<Int32> {
        UnsafeMutableBufferPointer(start: buffers[index].assumingMemoryBound(to: Int32.self), count: bytesPerFrame / 4 &* frameCount)
    }

    /// Buffer `index` as Float32 samples (for a Float32 format, interleaved or not).
    @_noLocks @inline(__always)
    public func floatSamples(_ index: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: buffers[index].assumingMemoryBound(to: Float.self), count: bytesPerFrame / 4 &* frameCount)
    }
}

/// When a slice is rendered. Mirrors the parts of `AudioTimeStamp` the engine fills in.
public struct AudioTimeStamp: Sendable, Equatable {
    /// Frames rendered since the graph started, counted at the rate of the element the call is
    /// about (the graph's rate for the device and for units at that rate).
    public var sampleTime: Double
    /// Creates a time stamp at a sample time.
    @_noLocks
    public init(sampleTime: Double) { self.sampleTime = sampleTime }
}

/// Supplies audio for an input element when it is pulled; the `AURenderCallback` analogue.
///
/// Called on the render thread once per slice with the element number and a buffer list in the
/// element's stream format to fill (zeroed before the call; `frameCount` frames at the element's
/// sample rate, which the graph then converts to what the unit processes). It must follow the real-time rules:
/// no allocation, locks, I/O or waiting (see <doc:RealTimeRules>). Return 0 on success; any
/// other value makes the engine render silence for that element and count a render error.
public typealias RenderCallback = @Sendable (_ timeStamp: AudioTimeStamp, _ element: AudioUnitElement, _ buffers: AudioBufferList) -> Int32

/// Notifies that device input is ready; the input-callback analogue of
/// `kAudioOutputUnitProperty_SetInputCallback`.
///
/// Called on the render thread at the start of each slice with the microphone (IO element 1)
/// audio in the application-side format. The buffers are read-only for the callback: copy what
/// you need (the `AudioUnitRender` step). Same real-time rules as ``RenderCallback``.
public typealias InputCallback = @Sendable (_ timeStamp: AudioTimeStamp, _ buffers: AudioBufferList) -> Void
