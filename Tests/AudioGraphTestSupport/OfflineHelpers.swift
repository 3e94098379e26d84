// Test support: offline graphs (IO → units → IO) and deterministic signals, for every test target.
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

/// IO → [extra units…] → IO, connected in a line, ready to render offline.
public struct Chain {
    public let graph = AudioGraph()
    public let io = IOUnit()
    public var nodes: [AUNode] = []
    public let ioNode: AUNode
    public let renderer: OfflineRenderer

    public init(_ units: [AudioUnit], channels: Int = 2, sampleRate: Double = 48_000, initialize: Bool = true) throws {
        ioNode = try graph.addNode(io)
        try io.setInputEnabled(true)
        var previous = (ioNode, IOUnit.inputElement)
        for unit in units {
            let node = try graph.addNode(unit)
            if let mixer = unit as? MultichannelMixerUnit {
                try mixer.setStreamFormat(try .float32(sampleRate: sampleRate, channels: UInt32(channels)), scope: .output, element: 0)
            }
            try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
            nodes.append(node)
            previous = (node, 0)
        }
        try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, ioNode, destinationInputElement: IOUnit.outputElement)
        renderer = try OfflineRenderer(graph: graph, inputChannels: channels, outputChannels: channels, sampleRate: sampleRate)
        if initialize {
            try graph.initialize()
            try graph.start()
        }
    }

    public func render(_ input: [[Float]], slice: Int = 256) throws -> [[Float]] {
        try renderer.render(input: input, frameCount: input.map(\.count).max() ?? 0, sliceFrames: slice)
    }
}

public func sine(frequency: Double, sampleRate: Double = 48_000, frames: Int, amplitude: Float = 0.5) -> [Float] {
    (0..<frames).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / sampleRate)) }
}

/// Deterministic pseudo-random samples in −1…1 (a 64-bit LCG), for exactness tests.
public func noise(frames: Int, seed: UInt64) -> [Float] {
    var x = seed
    return (0..<frames).map { _ in
        x = x &* 6364136223846793005 &+ 1442695040888963407
        return Float(Int32(truncatingIfNeeded: x >> 32)) / Float(Int32.max)
    }
}

public func rms(_ x: ArraySlice<Float>) -> Double {
    (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, x.count))).squareRoot()
}

public func decibels(_ ratio: Double) -> Double { 20 * log10(ratio) }

/// The sum of squares of `x[range]`.
public func energy(_ x: [Float], _ range: Range<Int>) -> Double {
    var sum = 0.0
    for i in range { sum += Double(x[i]) * Double(x[i]) }
    return sum
}

/// Scale-invariant correlation of `x[range]` with `y[range + lag]`.
public func correlation(_ x: [Float], _ y: [Float], _ range: Range<Int>, lag: Int = 0) -> Double {
    var xy = 0.0, xx = 0.0, yy = 0.0
    for i in range {
        let a = Double(x[i]), b = Double(y[i + lag])
        xy += a * b; xx += a * a; yy += b * b
    }
    return xy / max(sqrt(xx * yy), 1e-30)
}
