// graphbench: the engine's render cost against a plain-C reference measured in the same run,
// per-node scaling, and the cost of update() on a large graph.
//
//   swift run -c release graphbench                 full run (≥ 60 s of audio per slice size)
//   swift run -c release graphbench --seconds 10    shorter
//   swift run -c release graphbench --voice         the voice-processing section only
//   swift run -c release graphbench --standard      the standard graph against C only (for profilers)
//   swift run -c release graphbench --parallel      the several-threads section only
//   valgrind --tool=callgrind .build/release/graphbench --callgrind
//                                                   fixed, short, deterministic: instruction counts
//
// Times are wall-clock on a shared machine, so every figure is paired with a reference timed
// in the same process moments apart; ratios are what to compare across machines.
import AudioGraph
import CReference
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Options

var seconds = 60.0
var callgrind = false
var voiceOnly = false
var standardOnly = false
var parallelOnly = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let arg = arguments.next() {
    switch arg {
    case "--seconds":
        guard let v = arguments.next().flatMap(Double.init), v > 0 else { fatalError("--seconds needs a positive number") }
        seconds = v
    case "--callgrind": callgrind = true
    case "--voice": voiceOnly = true
    case "--standard": standardOnly = true
    case "--parallel": parallelOnly = true
    case "--help", "-h":
        print("usage: graphbench [--seconds S] [--callgrind] [--voice | --standard | --parallel]"); exit(0)
    default:
        print("graphbench: unknown option \(arg)"); exit(2)
    }
}
if callgrind { seconds = 1 }
if voiceOnly {
    // 5 alone: voice processing against the same graph bypassed.
    func voiceSeconds() -> Double { min(10, max(2, seconds / 6)) }
    do { try runVoiceBench(seconds: voiceSeconds()) } catch { print("graphbench: \(error)"); exit(1) }
    exit(0)
}

let sampleRate = 48_000.0
let channels = 2
let cutoff: Float = 1000

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// `[channel]` buffers of `frames` floats, deterministic noise in −0.5…0.5.
final class Buffers {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let channels: Int, frames: Int
    init(channels: Int, frames: Int, seed: UInt64?) {
        self.channels = channels
        self.frames = frames
        pointers = .allocate(capacity: channels)
        var x = seed ?? 0
        for c in 0..<channels {
            pointers[c] = .allocate(capacity: frames)
            for f in 0..<frames {
                if seed != nil {
                    x = x &* 6364136223846793005 &+ 1442695040888963407
                    pointers[c][f] = Float(Int32(truncatingIfNeeded: x >> 32)) / Float(Int32.max) * 0.5
                } else {
                    pointers[c][f] = 0
                }
            }
        }
    }
    /// Sum of every sample, in double: identical audio gives identical sums.
    var checksum: Double {
        var s = 0.0
        for c in 0..<channels { for f in 0..<frames { s += Double(pointers[c][f]) } }
        return s
    }
    deinit {
        for c in 0..<channels { pointers[c].deallocate() }
        pointers.deallocate()
    }
}

// MARK: - The standard graph

/// IO → low-pass (1 kHz, 0 dB) → mixer input 0 (input 1 connected to a silent source) → mute
/// gate (unmuted) → IO.
func standardGraph() throws -> AudioGraph {
    let graph = AudioGraph()
    let io = IOUnit(), filter = LowPassFilterUnit(), mixer = MultichannelMixerUnit(inputs: 2), gate = MuteGateUnit()
    let ioNode = try graph.addNode(io)
    let filterNode = try graph.addNode(filter), mixerNode = try graph.addNode(mixer), gateNode = try graph.addNode(gate)
    try io.setInputEnabled(true)
    try filter.setParameter(LowPassFilterUnit.Parameter.cutoffFrequency, cutoff, scope: .global)
    try filter.setParameter(LowPassFilterUnit.Parameter.resonance, 0, scope: .global)
    try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
    try graph.connectNodeInput(filterNode, sourceOutputElement: 0, mixerNode, destinationInputElement: 0)
    try graph.setNodeInputCallback(mixerNode, inputElement: 1) { _, _, _ in 0 }  // silent: buffers arrive zeroed
    try graph.connectNodeInput(mixerNode, sourceOutputElement: 0, gateNode, destinationInputElement: 0)
    try graph.connectNodeInput(gateNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
    return graph
}

/// Pulls `graph` for `total` frames in slices, as a driver would, cycling through `input` and
/// `output` (short buffers stay in cache, like a driver's period buffers); returns seconds taken.
/// `output` ends up holding the last pass.
func renderEngine(_ graph: AudioGraph, input: Buffers, output: Buffers, slice: Int, total: Int? = nil) -> Double {
    let context = graph.renderContext
    let inPtrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: input.channels)
    let outPtrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: output.channels)
    defer { inPtrs.deallocate(); outPtrs.deallocate() }
    let total = total ?? input.frames
    let start = now()
    var done = 0
    while done < total {
        let offset = done % input.frames
        let n = min(slice, input.frames - offset, total - done)
        for c in 0..<input.channels { inPtrs[c] = input.pointers[c] + offset }
        for c in 0..<output.channels { outPtrs[c] = output.pointers[c] + offset }
        context.render(frameCount: n, input: inPtrs, inputChannelCount: input.channels, output: outPtrs, outputChannelCount: output.channels)
        done += n
    }
    return now() - start
}

/// The same arithmetic in plain C over the same buffers, cycled the same way; returns seconds taken.
func renderReference(input: Buffers, output: Buffers, slice: Int, total: Int) -> Double {
    var coefficients = [Float](repeating: 0, count: 5)
    creference_lowpass_coefficients(Double(cutoff), 0, sampleRate, &coefficients)
    var state = [Float](repeating: 0, count: 4 * channels)
    let silent = Buffers(channels: channels, frames: slice, seed: nil)
    let tmp = UnsafeMutablePointer<Float>.allocate(capacity: slice)
    let inPtrs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: channels)
    let outPtrs = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: channels)
    let silentPtrs = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: channels)
    defer { tmp.deallocate(); inPtrs.deallocate(); outPtrs.deallocate(); silentPtrs.deallocate() }
    for c in 0..<channels { silentPtrs[c] = UnsafePointer(silent.pointers[c]) }
    let mode = creference_denormals_flush()
    defer { creference_denormals_restore(mode) }
    let start = now()
    var done = 0
    while done < total {
        let offset = done % input.frames
        let n = min(slice, input.frames - offset, total - done)
        for c in 0..<channels {
            inPtrs[c] = UnsafePointer(input.pointers[c] + offset)
            outPtrs[c] = output.pointers[c] + offset
        }
        creference_render(inPtrs, outPtrs, silentPtrs, tmp, Int32(channels), Int32(n), coefficients, &state, 1)
        done += n
    }
    return now() - start
}

func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s : String(repeating: " ", count: width - s.count) + s }
func fixed(_ x: Double, _ digits: Int) -> String {
    let p = pow(10.0, Double(digits))
    let v = (x * p).rounded() / p
    var s = String(v)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals < digits { s += String(repeating: "0", count: digits - decimals) }
    } else if digits > 0 { s += "." + String(repeating: "0", count: digits) }
    return s
}

let frames = Int(seconds * sampleRate)
// 49,152 frames (1.02 s): a whole number of slices of every size measured.
let loopFrames = 49_152
print("graphbench: \(fixed(seconds, 1)) s of stereo audio at 48 kHz per measurement, cycling through a \(loopFrames)-frame buffer\(callgrind ? " (callgrind mode)" : "")")
let input = Buffers(channels: channels, frames: loopFrames, seed: 42)

if parallelOnly {
    _ = try runParallelBench(frames: max(48_000, frames / 4), input: input, callgrind: false)
    exit(0)
}

// MARK: 1. Standard graph vs C reference

print("")
print("standard graph: IO → low-pass 1 kHz → mixer (2nd input silent) → mute gate → IO")
print("  slice   engine ns/frame   C ns/frame   ratio   checksum of the last pass, engine / C")
var ratioAt64 = 0.0
for slice in callgrind ? [64] : [32, 64, 256, 1024] {
    let engineOut = Buffers(channels: channels, frames: loopFrames, seed: nil)
    let referenceOut = Buffers(channels: channels, frames: loopFrames, seed: nil)
    // Alternate the two, three rounds each after a warm-up, and keep each one's best: on a shared
    // machine the minimum is the least disturbed measurement.
    var engineBest = Double.infinity, referenceBest = Double.infinity
    let rounds = callgrind ? 1 : 3
    if !callgrind {  // warm-up, both sides
        _ = renderEngine(try standardGraph().prepared(channels: channels), input: input, output: engineOut, slice: slice)
        _ = renderReference(input: input, output: referenceOut, slice: slice, total: input.frames)
    }
    for _ in 0..<rounds {
        let g = try standardGraph().prepared(channels: channels)
        engineBest = min(engineBest, renderEngine(g, input: input, output: engineOut, slice: slice, total: frames))
        referenceBest = min(referenceBest, renderReference(input: input, output: referenceOut, slice: slice, total: frames))
    }
    let e = engineBest / Double(frames) * 1e9, r = referenceBest / Double(frames) * 1e9
    let ratio = e / r
    if slice == 64 { ratioAt64 = ratio }
    let same = engineOut.checksum == referenceOut.checksum ? "identical" : "DIFFER"
    print("  \(pad(String(slice), 5))   \(pad(fixed(e, 2), 15))   \(pad(fixed(r, 2), 10))   \(pad(fixed(ratio, 2), 5))   \(fixed(engineOut.checksum, 6)) / \(fixed(referenceOut.checksum, 6)) (\(same))")
}

if standardOnly { exit(0) }

extension AudioGraph {
    /// Configured for the offline pull, initialized and started.
    func prepared(channels: Int) throws -> AudioGraph {
        _ = try OfflineRenderer(graph: self, inputChannels: channels, outputChannels: channels, sampleRate: 48_000)
        try initialize()
        try start()
        return self
    }
}

// MARK: 2. Scaling

/// A chain IO → gate × n → IO (unmuted gates pass their input's buffers on), or a fan-in tree: n − 1
/// gates fed by IO input, summed by mixers of 8 inputs each up to one root.
func scalingGraph(nodes n: Int, tree: Bool) throws -> AudioGraph {
    let graph = AudioGraph()
    let io = IOUnit()
    let ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    if !tree {
        var previous = (ioNode, AudioUnitElement(1))
        for _ in 0..<n {
            let node = try graph.addNode(MuteGateUnit())
            try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, node, destinationInputElement: 0)
            previous = (node, 0)
        }
        try graph.connectNodeInput(previous.0, sourceOutputElement: previous.1, ioNode, destinationInputElement: 0)
        return graph
    }
    // Leaves: gates. Then layers of mixers (fan-in 8) until one remains; count every node.
    var layer: [AUNode] = []
    var count = 0
    let fanIn = 8
    // Choose leaves so that leaves + mixers ≈ n.
    var leaves = max(1, n * (fanIn - 1) / fanIn)
    func mixersFor(_ l: Int) -> Int { var t = 0, m = l; while m > 1 { m = (m + fanIn - 1) / fanIn; t += m }; return t }
    while leaves > 1 && leaves + mixersFor(leaves) > n { leaves -= 1 }
    for _ in 0..<leaves {
        let node = try graph.addNode(MuteGateUnit())
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, node, destinationInputElement: 0)
        layer.append(node)
        count += 1
    }
    while layer.count > 1 || (count < n && layer.count == 1 && count == leaves) {
        var next: [AUNode] = []
        for group in stride(from: 0, to: layer.count, by: fanIn) {
            let members = layer[group..<min(group + fanIn, layer.count)]
            let mixer = MultichannelMixerUnit(inputs: members.count)
            let node = try graph.addNode(mixer)
            count += 1
            for (i, member) in members.enumerated() {
                try graph.connectNodeInput(member, sourceOutputElement: 0, node, destinationInputElement: AudioUnitElement(i))
            }
            next.append(node)
        }
        layer = next
        if layer.count == 1 { break }
    }
    try graph.connectNodeInput(layer[0], sourceOutputElement: 0, ioNode, destinationInputElement: 0)
    return graph
}

print("")
print("scaling (slice 256): cost per node per frame")
print("  nodes   chain ns/node/frame   fan-in tree ns/node/frame")
var perNode: [Int: Double] = [:], treePerNode: [Int: Double] = [:]
let scalingFrames = callgrind ? 48_000 : max(48_000, frames / 20)
for n in callgrind ? [10, 100] : [1, 10, 100, 1000] {
    var row: [Double] = []
    for tree in [false, true] {
        let graph = try scalingGraph(nodes: n, tree: tree).prepared(channels: channels)
        let nodes = graph.nodeCount - 1  // not counting IO
        // Fewer frames for big graphs keep the run short; the per-frame figure is unaffected.
        let framesHere = max(4096, scalingFrames / max(1, n / 10))
        let sub = Buffers(channels: channels, frames: framesHere, seed: 9)
        let out = Buffers(channels: channels, frames: framesHere, seed: nil)
        var best = Double.infinity
        for _ in 0..<(callgrind ? 1 : 3) { best = min(best, renderEngine(graph, input: sub, output: out, slice: 256)) }
        let cost = best / Double(framesHere) / Double(nodes) * 1e9
        row.append(cost)
        if tree { treePerNode[n] = cost } else { perNode[n] = cost }
    }
    print("  \(pad(String(n), 5))   \(pad(fixed(row[0], 3), 19))   \(pad(fixed(row[1], 3), 25))")
}

// MARK: 3. update() on a 1,000-node graph

print("")
let bigChain = try scalingGraph(nodes: 1000, tree: false).prepared(channels: channels)
let updates = callgrind ? 2 : 20
var updateTotal = 0.0
var cyclesUntilHeard: [Int] = []
let probeIn = Buffers(channels: channels, frames: 64, seed: 3)
let probeOut = Buffers(channels: channels, frames: 64, seed: nil)
let lastGate = try bigChain.node(at: bigChain.nodeCount - 1)
let ioNode = try bigChain.node(at: 0)
_ = renderEngine(bigChain, input: probeIn, output: probeOut, slice: 64)  // the output before any change
for i in 0..<updates {
    // Toggle the device output between the end of the chain and nothing (silence): audible.
    if i % 2 == 0 { try bigChain.disconnectNodeInput(ioNode, inputElement: 0) }
    else { try bigChain.connectNodeInput(lastGate, sourceOutputElement: 0, ioNode, destinationInputElement: 0) }
    let before = probeOut.checksum
    let t = now()
    try bigChain.update()
    updateTotal += now() - t
    var cycles = 0
    repeat {
        cycles += 1
        _ = renderEngine(bigChain, input: probeIn, output: probeOut, slice: 64)
    } while probeOut.checksum == before && cycles < 100
    cyclesUntilHeard.append(cycles)
}
print("update() on a 1,000-node chain: \(fixed(updateTotal / Double(updates) * 1e3, 2)) ms each (mean of \(updates)); heard after \(cyclesUntilHeard.max() ?? 0) cycle(s) at most")

// MARK: 4. Catalogue kernels, each against its C loop

try runKernelBenches(frames: callgrind ? 48_000 : max(48_000, frames / 4), input: input, callgrind: callgrind)

// MARK: 5. Several threads

let parallelSpeedup = try runParallelBench(frames: callgrind ? 48_000 : max(48_000, frames / 4), input: input, callgrind: callgrind)

// MARK: 6. Voice processing against the same graph bypassed

if !callgrind { try runVoiceBench(seconds: min(10, max(2, seconds / 6))) }

// S: the worse of the two shapes, so neither flatters the other.
let big = callgrind ? 100 : 1000
let chainGrowth = (perNode[big] ?? 0) / (perNode[10] ?? 1)
let treeGrowth = (treePerNode[big] ?? 0) / (treePerNode[10] ?? 1)
let s = max(chainGrowth, treeGrowth)
print("per-node cost \(big)/10 nodes: chain \(fixed(chainGrowth, 2)), fan-in tree \(fixed(treeGrowth, 2))")
print("")
print("summary: ratio@64=\(fixed(ratioAt64, 2)) per-node-\(big)/10=\(fixed(s, 2)) parallel-speedup=\(fixed(parallelSpeedup, 2))")
