// first-graph: the README's first graph — IO → low-pass → mixer → IO, rendered offline (no JACK needed).
// Run: swift run first-graph
import AudioGraph
import Foundation  // sin, log10, String(format:)

let graph = AudioGraph()
let io = IOUnit()
let filter = LowPassFilterUnit()
let mixer = MultichannelMixerUnit(inputs: 2)

let ioNode = try graph.addNode(io)
let filterNode = try graph.addNode(filter)
let mixerNode = try graph.addNode(mixer)
try io.setInputEnabled(true)                       // Apple's default: input off
try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, 1000, scope: .global)
try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, filterNode, destinationInputElement: 0)
try graph.connectNodeInput(filterNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)

// Bad input is a typed error with Apple's code, and changes nothing. A deliberate mistake
// (feeding the filter's input a second time) to show what a refusal looks like:
do {
    try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, filterNode, destinationInputElement: 0)
} catch {
    print("expected refusal (a deliberate bad connection; the graph is unchanged): \(error)")
}

let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2, sampleRate: 48_000)
try graph.initialize()
try graph.start()

func level(ofSineAt hz: Double, through renderer: OfflineRenderer) throws -> Double {
    let sine = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * hz * Double($0) / 48_000)) }
    let out = try renderer.render(input: [sine, sine], frameCount: sine.count)[0]
    let tail = out[24_000...]
    let rms = (tail.reduce(0.0) { $0 + Double($1 * $1) } / Double(tail.count)).squareRoot()
    let gain = 20 * log10(rms / (0.5 / 2.0.squareRoot()))
    return abs(gain) < 0.005 ? 0 : gain            // print 0.00, not -0.00
}
for hz in [100.0, 1000, 8000] {
    print("\(Int(hz)) Hz through a 1 kHz low-pass: \(String(format: "%.2f", try level(ofSineAt: hz, through: renderer))) dB")
}
print(graph)                                       // a CAShow-style dump
