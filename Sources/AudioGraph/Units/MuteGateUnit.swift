// Units: the mute gate unit and its kernel.

/// A gain gate whose Mute parameter ramps the gain linearly, so toggling never clicks.
///
/// Input and output have the same format (setting either sets both). Unmuted with the ramp
/// finished, output is input bit for bit (its buffers are passed on without a copy). Muted
/// with the ramp finished, output is exact zeros. While ramping, the gain moves by `1 / (RampTime × sampleRate)` per frame,
/// so no sample step exceeds that fraction of full scale plus the signal's own step.
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class MuteGateUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0).
    public enum Parameter {
        /// Mute: 0 = pass, 1 = silent. Boolean; values ≥ 0.5 mean muted. Default 0.
        public static let mute: AudioUnitParameterID = 0
        /// RampTime: seconds for a full 0 ↔ 1 gain change, 0.001…1, default 0.01 (10 ms).
        public static let rampTime: AudioUnitParameterID = 1
    }

    /// Creates an unmuted stereo gate.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .muteGate, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.mute, name: "Mute", scope: .global, unit: .boolean,
                                minValue: 0, maxValue: 1, defaultValue: 0, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.rampTime, name: "RampTime", scope: .global, unit: .seconds,
                                minValue: 0.001, maxValue: 1, defaultValue: 0.01, clampsToRange: true)]
    }

    /// Whether the gate is muted (or ramping towards muted). Thread: any.
    public var isMuted: Bool {
        get { bank.load(0) >= 0.5 }
        set { bank.store(0, newValue ? 1 : 0) }
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .muteGate }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<MuteGateState>.stride }
    // A new gate starts at the gain its Mute value asks for.
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        state.bindMemory(to: MuteGateState.self, capacity: 1).initialize(to: MuteGateState(gain: isMuted ? 0 : 1))
    }
}

/// The mute gate kernel's state. Trivial.
struct MuteGateState {
    /// The gain now, 0…1.
    var gain: Float
}

/// The mute gate's kernel: reads Mute and RampTime and fades with a ``GainRamp``.
enum MuteGateKernel {
    /// Renders one piece: `out[c][f] = in[c][f] × g[f]`, g ramping linearly toward 0 or 1. On a
    /// whole slice at unity the input's buffers are passed on instead of copied. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let offset = piece.offset, frames = piece.frames
        let state = s.state.assumingMemoryBound(to: MuteGateState.self)
        let out = s.output
        // Bank slots: the global parameters in definition order (0 Mute, 1 RampTime).
        let target: Float = loadParameter(s.parameters, 0) >= 0.5 ? 0 : 1
        let rampFrames = max(Float(1), loadParameter(s.parameters, 1) * s.sampleRate)
        let increment = 1 / rampFrames
        let gain = state.pointee.gain
        guard let input = s.inputs[0].channels else {
            for c in 0..<s.outputChannelCount { (out[c] + offset).update(repeating: 0, count: frames) }
            state.pointee.gain = target
            return
        }
        let channels = min(s.inputs[0].channelCount, s.outputChannelCount)
        if gain == target {
            if target == 1 && piece.isWholeSlice {
                // Unity: pass the input's buffers on instead of copying them.
                for c in 0..<channels { out[c] = input[c] }
            } else if target == 1 {
                for c in 0..<channels { copy(input[c] + offset, to: out[c] + offset, frames: frames) }
            } else {
                for c in 0..<channels { (out[c] + offset).update(repeating: 0, count: frames) }
            }
            return
        }
        // Every channel follows the same ramp; the gain carried on is where it ended.
        var end = gain
        for c in 0..<channels {
            end = GainRamp.apply(from: gain, toward: target, increment: increment,
                                 input: UnsafePointer(input[c] + offset), output: out[c] + offset, frames: frames)
        }
        state.pointee.gain = end
    }
}
