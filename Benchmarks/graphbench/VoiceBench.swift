// graphbench: the voice-processing IO unit (WebRTC's echo canceller, noise suppressor, VAD) against the same graph with processing bypassed, alternately in one run.
import AudioGraph
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A mono voice-processing graph rendered offline (the unit processes inline, so the library's
/// work is on the timed thread; live it runs on the unit's worker, the same arithmetic): element
/// 0 plays the far end from a render callback, the microphone is the far end 40 ms late at −6 dB
/// plus a quieter second signal (double talk), element 1 pulled through to nowhere but the
/// unit's own processing. `bypassed`: Apple's BypassVoiceProcessing on, the same graph.
/// Returns seconds of wall-clock time per second of audio.
func voiceProcessingCost(bypassed: Bool, seconds: Double, noiseSuppression: Bool) throws -> Double {
    let rate = 48_000, frames = Int(seconds * Double(rate))
    let far = Buffers(channels: 1, frames: frames, seed: 7)
    let near = Buffers(channels: 1, frames: frames, seed: 8)
    var mic = [Float](repeating: 0, count: frames)
    for i in 0..<frames { mic[i] = (i >= 1920 ? 0.5 * far.pointers[0][i - 1920] : 0) + 0.1 * near.pointers[0][i] }
    let graph = AudioGraph()
    let unit = VoiceProcessingIOUnit()
    let node = try graph.addNode(unit)
    try unit.setInputEnabled(true)
    unit.bypassesVoiceProcessing = bypassed
    unit.enablesAGC = false
    unit.extraEchoPathDelay = 0.04
    try unit.setParameter(VoiceProcessingIOUnit.Parameter.noiseSuppression, noiseSuppression ? 2 : 0, scope: .global)
    let farSamples = Array(UnsafeBufferPointer(start: far.pointers[0], count: frames))
    let position = RenderState(0)
    try graph.setNodeInputCallback(node, inputElement: IOUnit.outputElement) { _, _, buffers in
        let start = position.value
        for i in 0..<buffers.frameCount { buffers[0][i] = start + i < frames ? farSamples[start + i] : 0 }
        position.value += buffers.frameCount
        return 0
    }
    let renderer = try OfflineRenderer(graph: graph, inputChannels: 1, outputChannels: 1)
    try graph.initialize()
    try graph.start()
    let t0 = now()
    _ = try renderer.render(input: [mic], frameCount: frames, sliceFrames: 256)
    let elapsed = now() - t0
    return elapsed / seconds
}

/// Prints processing on against bypassed, alternately, three rounds each, and the ratio of medians.
func runVoiceBench(seconds: Double) throws {
    print("")
    print("voice processing (VoiceProcessingIOUnit, mono 48 kHz, 256-frame slices, \(fixed(seconds, 1)) s per measurement; CPU s per s of audio):")
    for noiseSuppression in [false, true] {
        var on: [Double] = [], off: [Double] = []
        for _ in 0..<3 {
            on.append(try voiceProcessingCost(bypassed: false, seconds: seconds, noiseSuppression: noiseSuppression))
            off.append(try voiceProcessingCost(bypassed: true, seconds: seconds, noiseSuppression: noiseSuppression))
        }
        let medianOn = on.sorted()[1], medianOff = off.sorted()[1]
        let label = noiseSuppression ? "AEC + NS moderate + VAD" : "AEC + VAD"
        print("  \(pad(label, 24)): processing \(fixed(medianOn * 1000, 2)) ms/s (\(fixed(medianOn * 100, 2)) % of one core), "
              + "bypassed \(fixed(medianOff * 1000, 2)) ms/s; processing costs \(fixed(medianOn / medianOff, 1))× the bypassed graph")
    }
}
