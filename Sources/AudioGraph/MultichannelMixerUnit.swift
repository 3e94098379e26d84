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
    override func prepareKernelState(_ state: UnsafeMutablePointer<Float>, inputCount: Int) {
        let stereo = outputFormats[0].channelsPerFrame == 2
        for i in 0..<inputCount {
            let (l, r) = MixerKernel.gains(volume: bank.load(3 * i), pan: bank.load(3 * i + 2), stereo: stereo)
            state[2 * i] = l
            state[2 * i + 1] = r
        }
        state[2 * inputCount] = bank.load(3 * inputCount)
    }
    // Per input: current left and right gain (for ramps); then the current output volume.
    override func kernelStateCount(inputChannels: [Int], outputChannels: Int) -> Int { 2 * inputChannels.count + 1 }
}

enum MixerKernel {
    /// Balance law gains for (volume, pan) on a stereo output; (volume, volume) otherwise.
    @_noLocks @inline(__always)
    static func gains(volume: Float, pan: Float, stereo: Bool) -> (Float, Float) {
        guard stereo else { return (volume, volume) }
        return (volume * min(1, 1 - pan), volume * min(1, 1 + pan))
    }

    /// Renders frames `offset..<offset + frames`. Gains glide linearly from their values at the
    /// end of the previous piece to the current parameters across the piece (de-zippering);
    /// `snap` starts them at the current parameters instead (a scheduled immediate change).
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, offset: Int, frames: Int, snap: Bool) {
        let s = step.pointee
        let out = s.output
        let outChannels = s.outputChannelCount
        let stereo = outChannels == 2
        let st = s.state
        var wrote = false
        for i in 0..<s.inputCount {
            let p = s.parameters + 3 * i
            let enabled = loadParameter(p, 1) >= 0.5
            let (targetL, targetR) = gains(volume: loadParameter(p, 0), pan: loadParameter(p, 2), stereo: stereo)
            let cur = st + 2 * i
            if snap { cur[0] = targetL; cur[1] = targetR }
            guard enabled, let input = s.inputs[i].channels else {
                // Nothing to ramp from next time the input plays: start at the target.
                cur[0] = targetL; cur[1] = targetR
                continue
            }
            let inChannels = s.inputs[i].channelCount
            for c in 0..<outChannels {
                let src = input[inChannels == 1 ? 0 : min(c, inChannels - 1)] + offset
                let isRight = stereo && c == 1
                let g0 = isRight ? cur[1] : cur[0]
                let g1 = isRight ? targetR : targetL
                accumulate(src, into: out[c] + offset, frames: frames, from: g0, to: g1, first: !wrote)
            }
            cur[0] = targetL; cur[1] = targetR
            wrote = true
        }
        if !wrote { for c in 0..<outChannels { (out[c] + offset).update(repeating: 0, count: frames) } }
        let outIndex = 2 * s.inputCount
        let ov = loadParameter(s.parameters, 3 * s.inputCount)
        if snap { st[outIndex] = ov }
        let ov0 = st[outIndex]
        if ov != 1 || ov0 != 1 {
            for c in 0..<outChannels { scale(out[c] + offset, frames: frames, from: ov0, to: ov) }
        }
        st[outIndex] = ov
    }

    /// `dst = (first ? 0 : dst) + src × g`, g ramping linearly from `g0` to `g1` across the slice.
    @_noLocks @inline(__always)
    static func accumulate(_ src: UnsafeMutablePointer<Float>, into dst: UnsafeMutablePointer<Float>, frames: Int, from g0: Float, to g1: Float, first: Bool) {
        if g0 == g1 {
            if first {
                if g1 == 1 { copy(src, to: dst, frames: frames) } else { for f in 0..<frames { dst[f] = src[f] * g1 } }
            } else {
                for f in 0..<frames { dst[f] += src[f] * g1 }
            }
            return
        }
        let step = (g1 - g0) / Float(max(frames, 1))
        if first { for f in 0..<frames { dst[f] = src[f] * (g0 + step * Float(f + 1)) } }
        else { for f in 0..<frames { dst[f] += src[f] * (g0 + step * Float(f + 1)) } }
    }

    @_noLocks @inline(__always)
    static func scale(_ buffer: UnsafeMutablePointer<Float>, frames: Int, from g0: Float, to g1: Float) {
        if g0 == g1 { for f in 0..<frames { buffer[f] *= g1 }; return }
        let step = (g1 - g0) / Float(max(frames, 1))
        for f in 0..<frames { buffer[f] *= g0 + step * Float(f + 1) }
    }
}
