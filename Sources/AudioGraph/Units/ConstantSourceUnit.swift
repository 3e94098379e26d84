// Units: the constant source — Web Audio's ConstantSourceNode — and its kernel.

/// A constant signal: Web Audio's `ConstantSourceNode` (no Apple counterpart). No input elements;
/// one output element of any channel count, every sample of every channel equal to Offset.
///
/// With Offset steady the output is exactly Offset. Scheduled immediate changes land on their
/// frame; linear ramps and target approaches are followed frame by frame (linear across each
/// automation piece of at most 32 frames); a plain ``AudioUnit/setParameter(_:_:scope:element:)``
/// glides linearly across the next slice. Useful as a control signal, a DC test source, or, with
/// ramps, an envelope.
///
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class ConstantSourceUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0).
    public enum Parameter {
        /// Offset: the output value, any finite number, default 1 (Web Audio's `offset`, whose
        /// nominal range is the whole Float range: ±3.4 × 10³⁸, which is what parameterInfo reports).
        public static let offset: AudioUnitParameterID = 0
    }

    /// Creates a stereo source of 1.0.
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .constantSource, inputFormats: [], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.offset, name: "Offset", unit: .generic,
                                minValue: -.greatestFiniteMagnitude, maxValue: .greatestFiniteMagnitude, defaultValue: 1)]
    }

    override var kernelKind: KernelKind { .constantSource }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<ConstantSourceState>.stride }
}

/// The constant source kernel's state. Trivial; zeroed memory is a valid state.
struct ConstantSourceState {
    /// Offset at the end of the last piece; `started` false before the first.
    var value: Float
    var started: Bool
}

/// The constant source's kernel.
enum ConstantSourceKernel {
    /// Renders one piece: `out[c][f] = v0 + (v1 − v0)·(f + 1)/frames`, exactly `v1` when the
    /// value holds. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: ConstantSourceState.self)
        let v1 = loadParameter(s.parameters, 0)
        if !state.pointee.started || piece.snapsParameters {
            state.pointee.value = v1
            state.pointee.started = true
        }
        let frames = piece.frames
        guard frames > 0, s.outputChannelCount > 0 else { return }
        let v0 = state.pointee.value
        let out = s.output[0] + piece.offset
        if v0 == v1 {
            out.update(repeating: v1, count: frames)
        } else {
            let step = (v1 - v0) / Float(frames)
            for f in 0..<frames { out[f] = v0 + step * Float(f + 1) }
            out[frames - 1] = v1
        }
        for c in 1..<s.outputChannelCount { copy(out, to: s.output[c] + piece.offset, frames: frames) }
        state.pointee.value = v1
    }
}
