// custom-unit: your own processing in Swift — a tremolo as a RenderCallbackUnit, run offline and measured.
//
// The tremolo has two parameters; it runs through a graph offline (no JACK needed).
//
//   swift run custom-unit
//
// The same unit goes into a live graph like any other (see Examples/graphthru for the JACK side).
import AudioGraph
import Foundation

// Parameter IDs are the parameters' positions.
enum Tremolo {
    static let rate: AudioUnitParameterID = 0   // Hz
    static let depth: AudioUnitParameterID = 1  // 0 … 1
}

// The LFO's phase is the unit's state: the unit owns it and hands it to every call mutably
// (no allocation on the render thread, no pointer passed around as an integer).
struct LFO { var phase = 0.0 }

let tremolo = try RenderCallbackUnit(inputs: 1, parameters: [
    AudioUnitParameterInfo(id: Tremolo.rate, name: "Rate", unit: .hertz, minValue: 0.1, maxValue: 20, defaultValue: 5),
    AudioUnitParameterInfo(id: Tremolo.depth, name: "Depth", unit: .linearGain, minValue: 0, maxValue: 1, defaultValue: 0.5),
], state: LFO()) { lfo, context in
    guard let input = context.input(0) else { return 0 }  // unconnected: the output stays silent
    let step = Double(context.parameter(Tremolo.rate)) / context.sampleRate
    let depth = context.parameter(Tremolo.depth)
    for f in 0..<context.frameCount {
        // Gain swings between 1 − depth and 1.
        let gain = 1 - depth * Float(0.5 - 0.5 * cos(2 * Double.pi * lfo.phase))
        for c in 0..<context.output.channelCount { context.output[c][f] = input[c][f] * gain }
        lfo.phase += step
        if lfo.phase >= 1 { lfo.phase -= 1 }
    }
    return 0
}

// IO input → tremolo → IO output, rendered offline at 48 kHz.
let graph = AudioGraph()
let io = IOUnit()
let ioNode = try graph.addNode(io)
let tremoloNode = try graph.addNode(tremolo)
try io.setInputEnabled(true)
try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, tremoloNode, destinationInputElement: 0)
try graph.connectNodeInput(tremoloNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2, sampleRate: 48_000)
try graph.initialize()
try graph.start()

// One second of a steady 1 kHz tone at 0.5; the envelope of the output shows the tremolo.
let tone = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48_000)) }
let output = try renderer.render(input: [tone, tone], frameCount: tone.count)
// Peak per 10 ms block (ten cycles of the tone) tracks the gain.
let envelope = stride(from: 0, to: 48_000, by: 480).map { start in output[0][start..<(start + 480)].map(abs).max()! / 0.5 }
print(String(format: "tremolo at %.0f Hz, depth %.2f: gain swings %.2f … %.2f (expected %.2f … 1.00)",
             try tremolo.parameter(Tremolo.rate, scope: .global), try tremolo.parameter(Tremolo.depth, scope: .global),
             envelope.min()!, envelope.max()!, 1 - (try tremolo.parameter(Tremolo.depth, scope: .global))))

// Parameters ramp sample-accurately, like any unit's: depth to 1 over the next half second.
try tremolo.scheduleParameter(AudioUnitParameterEvent(id: Tremolo.depth, scope: .global, .linearRamp(to: 1, durationFrames: 24_000)))
let ramped = try renderer.render(input: [tone, tone], frameCount: tone.count)
let tail = stride(from: 24_000, to: 48_000, by: 96).map { start in ramped[0][start..<(start + 96)].map(abs).max()! / 0.5 }
print(String(format: "after a ramp to depth 1.00: the gain swings %.2f … %.2f (expected 0.00 … 1.00)", tail.min()!, tail.max()!))
print("failed renders: \(tremolo.failedRenderCount)")
