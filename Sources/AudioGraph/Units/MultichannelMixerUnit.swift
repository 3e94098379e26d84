// Units: the multichannel mixer unit (kAudioUnitSubType_MultiChannelMixer) and its kernel.

/// Sums any number of input elements into one output: the `kAudioUnitSubType_MultiChannelMixer`
/// analogue.
///
/// - Input elements: 8 by default; change with ElementCount (input scope) while uninitialized.
///   Each input may have the output's channel count, or 1 (mono is copied to every output channel).
/// - Per input: Volume (linear gain), Enable (0/1), Pan (−1…1). Output scope: Volume.
/// - Pan law (stereo output only): a linear balance, unity at the centre —
///   left gain = volume × min(1, 1 − pan), right gain = volume × min(1, 1 + pan). With other
///   channel counts pan is ignored. Centre pan and unity volume pass samples bit for bit.
/// - Sums in Float32 without clipping per input; unconnected or disabled inputs contribute exact zeros.
/// - A volume or pan change is ramped linearly across the next slice, so it does not click.
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class MultichannelMixerUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs. Mirror `kMultiChannelMixerParam_*`.
    public enum Parameter {
        /// Volume: linear gain, nominally 0…1, default 1. Input scope (per input) and output scope
        /// element 0. Any finite value is accepted (gain above 1 amplifies; negative inverts).
        public static let volume: AudioUnitParameterID = 0
        /// Enable: input scope, 0/1, default 1. A disabled input contributes exact zeros.
        public static let enable: AudioUnitParameterID = 1
        /// Pan: input scope, −1 (left) … 1 (right), default 0; clamped.
        public static let pan: AudioUnitParameterID = 2
    }

    /// Creates a mixer with `inputs` input elements and a stereo output.
    /// - Parameter inputs: input element count, 0…1024 (default 8).
    public init(inputs: Int = 8) {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .multichannelMixer,
                   inputFormats: Array(repeating: stereo, count: max(0, min(inputs, 1024))),
                   outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.volume, name: "Volume", scope: .input, unit: .linearGain,
                                minValue: 0, maxValue: 1, defaultValue: 1, clampsToRange: false),
         AudioUnitParameterInfo(id: Parameter.enable, name: "Enable", scope: .input, unit: .boolean,
                                minValue: 0, maxValue: 1, defaultValue: 1, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.pan, name: "Pan", scope: .input, unit: .pan,
                                minValue: -1, maxValue: 1, defaultValue: 0, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.volume, name: "Volume", scope: .output, unit: .linearGain,
                                minValue: 0, maxValue: 1, defaultValue: 1, clampsToRange: false)]
    }

    override func canSetElementCount(_ scope: AudioUnitScope) -> Bool { scope == .input }

    /// Connecting to input `elementCount` adds that input, even while running (a mixer made
    /// with no inputs renders exact zeros until then).
    override var growsInputsByConnection: Bool { true }

    /// Same channel count as the output, or mono (the kernel copies it to every output channel).
    override func acceptsInputChannels(_ inputChannels: Int, outputChannels: Int) -> Bool {
        inputChannels == 1 || inputChannels == outputChannels
    }

    override var kernelKind: KernelKind { .mixer }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        MixerState.byteCount(inputs: inputChannels.count)
    }
    // Gains start where the current parameters put them, so a new mixer does not ramp from 0.
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        let stereo = outputFormats[0].channelsPerFrame == 2
        let mixer = state.bindMemory(to: MixerState.self, capacity: 1)
        mixer.initialize(to: MixerState(outputVolume: bank.load(3 * inputCount)))
        let gains = UnsafeMutableRawPointer(mixer + 1).bindMemory(to: MixerInputGains.self, capacity: inputCount)
        for i in 0..<inputCount {
            let (l, r) = LinearGain.balance(volume: bank.load(3 * i), pan: bank.load(3 * i + 2), stereo: stereo)
            (gains + i).initialize(to: MixerInputGains(left: l, right: r))
        }
    }
}

/// The mixer kernel's state: the output volume now, followed in memory by one
/// ``MixerInputGains`` per input element. Trivial.
struct MixerState {
    /// The output volume reached at the end of the last piece (ramps start here).
    var outputVolume: Float

    /// Bytes for a mixer with `inputs` input elements.
    static func byteCount(inputs: Int) -> Int {
        MemoryLayout<MixerState>.stride + inputs * MemoryLayout<MixerInputGains>.stride
    }

    /// `[input]` gains, right after the state.
    @_noLocks @inline(__always)
    static func inputGains(_ state: UnsafeMutablePointer<MixerState>) -> UnsafeMutablePointer<MixerInputGains> {
        UnsafeMutableRawPointer(state + 1).assumingMemoryBound(to: MixerInputGains.self)
    }
}

/// One input's left and right gain reached at the end of the last piece (volume and pan
/// combined by the balance law). Trivial.
struct MixerInputGains {
    var left: Float
    var right: Float
}

/// The mixer's kernel: reads each input's Volume, Enable and Pan and the output Volume, and
/// sums with ``LinearGain`` stages.
enum MixerKernel {
    /// Renders one piece. Gains glide linearly from their values at the end of the previous
    /// piece to the current parameters across the piece (de-zippering); `snapsParameters`
    /// starts them at the current parameters instead (a scheduled immediate change). Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let offset = piece.offset, frames = piece.frames, snap = piece.snapsParameters
        let out = s.output
        let outChannels = s.outputChannelCount
        let stereo = outChannels == 2
        let state = s.state.assumingMemoryBound(to: MixerState.self)
        let gains = MixerState.inputGains(state)
        var wrote = false
        // Bank slots: per input element (Volume, Enable, Pan), then the output's Volume.
        for i in 0..<s.inputCount {
            let p = s.parameters + 3 * i
            let enabled = loadParameter(p, 1) >= 0.5
            let (targetL, targetR) = LinearGain.balance(volume: loadParameter(p, 0), pan: loadParameter(p, 2), stereo: stereo)
            let current = gains + i
            if snap { current.pointee = MixerInputGains(left: targetL, right: targetR) }
            guard enabled, let input = s.inputs[i].channels else {
                // Nothing to ramp from next time the input plays: start at the target.
                current.pointee = MixerInputGains(left: targetL, right: targetR)
                continue
            }
            let inChannels = s.inputs[i].channelCount
            for c in 0..<outChannels {
                let src = input[inChannels == 1 ? 0 : min(c, inChannels - 1)] + offset
                let isRight = stereo && c == 1
                let g0 = isRight ? current.pointee.right : current.pointee.left
                let g1 = isRight ? targetR : targetL
                LinearGain.accumulate(src, into: out[c] + offset, frames: frames, from: g0, to: g1, first: !wrote)
            }
            current.pointee = MixerInputGains(left: targetL, right: targetR)
            wrote = true
        }
        if !wrote { for c in 0..<outChannels { (out[c] + offset).update(repeating: 0, count: frames) } }
        let volume = loadParameter(s.parameters, 3 * s.inputCount)
        if snap { state.pointee.outputVolume = volume }
        let from = state.pointee.outputVolume
        if volume != 1 || from != 1 {
            for c in 0..<outChannels { LinearGain.scale(out[c] + offset, frames: frames, from: from, to: volume) }
        }
        state.pointee.outputVolume = volume
    }
}
