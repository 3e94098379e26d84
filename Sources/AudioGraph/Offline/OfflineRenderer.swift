// Offline: the offline driver — renders a graph with no audio server.

/// Renders a graph with no device, deterministically, on the calling thread: the analogue of
/// AVAudioEngine's manual rendering mode, for tests, benchmarks and file processing.
///
/// It plays the driver's part: it configures the graph's ``IOUnit`` device sides, then feeds
/// given input buffers to IO element 1 and collects IO element 0, slice by slice, through the
/// same ``GraphRenderContext/render(frameCount:input:inputChannelCount:output:outputChannelCount:)``
/// a real-time driver calls.
///
/// File players are waited for: before each slice, the renderer waits until every playing
/// ``AudioFilePlayerUnit`` in the graph has that slice read from disk (or its file's end, or a
/// seek taken), so an offline render of a file is the file, whatever the disk's speed — as
/// AVAudioEngine's manual rendering reads its player nodes' files. ``waitsForFilePlayers``
/// turns that off (a slice then finds what the disk thread has read, as on a live device).
///
/// Thread: one control thread (it renders on the caller's thread, which counts as the render
/// thread while a render call runs).
public final class OfflineRenderer {
    /// Whether each slice waits (5 s at most) for the graph's playing file players to have it
    /// read from disk. Default true: deterministic. False: as a live device, a slice the disk
    /// thread has not read yet plays silence and counts as an underrun.
    public var waitsForFilePlayers = true
    /// The graph being rendered.
    public let graph: AudioGraph
    /// Device input channels (IO element 1).
    public let inputChannels: Int
    /// Device output channels (IO element 0).
    public let outputChannels: Int
    /// Device sample rate in Hz.
    public let sampleRate: Double

    /// Attaches to a graph and configures its IO unit's device sides.
    /// - Parameters:
    ///   - graph: an uninitialized graph holding an ``IOUnit`` node.
    ///   - inputChannels: device input channels, 1…64.
    ///   - outputChannels: device output channels, 1…64.
    ///   - sampleRate: Hz, 1…768 000.
    /// - Throws: ``AudioUnitError/outputNodeErr`` (no IO node), ``AudioUnitError/formatNotSupported``,
    ///   ``AudioUnitError/initialized`` (the graph is already initialized with other device formats).
    public init(graph: AudioGraph, inputChannels: Int = 2, outputChannels: Int = 2, sampleRate: Double = 48_000) throws(AudioUnitError) {
        guard let io = graph.ioUnit else { throw .outputNodeErr }
        guard inputChannels >= 1, outputChannels >= 1, inputChannels <= 64, outputChannels <= 64 else { throw .formatNotSupported }
        try io.configureDevice(inputChannels: UInt32(inputChannels), outputChannels: UInt32(outputChannels), sampleRate: sampleRate)
        // Voice processing runs on the render thread here: deterministic, nothing to keep up with.
        (io as? VoiceProcessingIOUnit)?.rendersOffline = true
        self.graph = graph
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
        self.sampleRate = sampleRate
    }

    /// Renders `input` through the graph and returns what reached the device output.
    /// - Parameters:
    ///   - input: `[channel][frame]`; missing channels or frames read as silence.
    ///   - frameCount: frames to render, ≥ 0.
    ///   - sliceFrames: frames per pull, 1…; larger than MaximumFramesPerSlice is split.
    /// - Returns: `[outputChannels][frameCount]`.
    /// - Throws: ``AudioUnitError/uninitialized`` (initialize the graph first),
    ///   ``AudioUnitError/invalidPropertyValue`` (`sliceFrames` < 1 or `frameCount` < 0).
    public func render(input: [[Float]], frameCount: Int, sliceFrames: Int = 256) throws(AudioUnitError) -> [[Float]] {
        guard graph.isInitialized else { throw .uninitialized }
        guard sliceFrames >= 1, frameCount >= 0 else { throw .invalidPropertyValue }
        // `[channel][frame]` buffers this call owns for its whole length: the render context
        // gets pointers into them, valid until they are copied out and freed below (no pointer
        // taken inside a `withUnsafe…` closure outlives it).
        let inBuffer = UnsafeMutablePointer<Float>.allocate(capacity: max(1, inputChannels * frameCount))
        let outBuffer = UnsafeMutablePointer<Float>.allocate(capacity: max(1, outputChannels * frameCount))
        let inPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: inputChannels)
        let outPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: outputChannels)
        defer { inBuffer.deallocate(); outBuffer.deallocate(); inPointers.deallocate(); outPointers.deallocate() }
        inBuffer.initialize(repeating: 0, count: inputChannels * frameCount)
        outBuffer.initialize(repeating: 0, count: outputChannels * frameCount)
        for c in 0..<min(inputChannels, input.count) {
            let n = min(frameCount, input[c].count)
            if n > 0 { input[c].withUnsafeBufferPointer { (inBuffer + c * frameCount).update(from: $0.baseAddress!, count: n) } }
        }
        let context = graph.renderContext
        let players = waitsForFilePlayers ? graph.nodes.compactMap { try? graph.nodeInfo($0) as? AudioFilePlayerUnit } : []
        var offset = 0
        while offset < frameCount {
            let n = min(sliceFrames, frameCount - offset)
            for player in players { player.waitUntilSliceIsRead(frames: n) }
            for c in 0..<inputChannels { inPointers[c] = inBuffer + c * frameCount + offset }
            for c in 0..<outputChannels { outPointers[c] = outBuffer + c * frameCount + offset }
            context.render(frameCount: n, input: inPointers, inputChannelCount: inputChannels,
                           output: outPointers, outputChannelCount: outputChannels)
            offset += n
        }
        let output = (0..<outputChannels).map { c in Array(UnsafeBufferPointer(start: outBuffer + c * frameCount, count: frameCount)) }
        return output
    }
}
