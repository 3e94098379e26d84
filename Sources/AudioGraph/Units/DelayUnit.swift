// Units: the delay unit (kAudioUnitSubType_Delay, AUDelay) and its kernel.
#if canImport(Glibc)
import Glibc
#endif

/// An echo: a delay line with feedback through a low-pass filter, mixed with the dry signal —
/// the `kAudioUnitSubType_Delay` (AUDelay, AVAudioUnitDelay) analogue.
///
/// - Signal flow per channel: the delay line receives `input + feedback × lowPass(delayed)`;
///   the output is `dry × input + wet × delayed`, where `delayed` is the line read DelayTime
///   back. An impulse comes out once after DelayTime (exactly, at a whole number of frames),
///   then again every DelayTime, each repeat the previous one through the low-pass and times
///   Feedback. The low-pass is the RBJ Audio EQ Cookbook's Butterworth (Q = 1/√2) at
///   LopassCutoff; at DC it passes exactly, so each repeat's sum is Feedback times the previous one's.
/// - WetDryMix is an equal-power crossfade, as Apple's unit for it says: dry = cos(π/2 · mix/100),
///   wet = sin(π/2 · mix/100) (50 % gives both 0.707).
/// - Memory: the line holds 2 s at the rate the unit runs at, allocated (zeroed) when the graph
///   builds its plan, on the control thread, and kept across plan rebuilds.
/// - Changes: a DelayTime change moves the read position smoothly — approached exponentially
///   (τ = 50 ms) and at most half a frame per frame (the echo's pitch bends by at most −12 to
///   +7 semitones while it moves), read between frames by linear interpolation — so it never
///   clicks, as a tape delay's would not; large changes take about twice their size to
///   complete. LopassCutoff glides like ``BiquadFilterUnit``'s frequencies; WetDryMix and
///   Feedback ramp linearly across one slice. A scheduled immediate change jumps on its frame.
/// - The loop needs one frame: delay times below one frame act as one frame. A DelayTime
///   within 1/10000 of a frame of a whole number of frames is that number exactly (Float
///   seconds cannot say most of them: 0.01 s is 479.99999 frames at 48 kHz).
/// - Denormals: values written to the line below 1e-30 in magnitude are exact zeros, so the
///   repeats of a silent input end in exact silence.
/// - Tail time (``AudioUnitPropertyID/tailTime``): DelayTime × the repeats until −60 dB,
///   `1 + ⌈ln(0.001)/ln|feedback|⌉` (DelayTime without feedback). Latency: none (the dry path is immediate).
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class DelayUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kDelayParam_*`.
    public enum Parameter {
        /// WetDryMix (`kDelayParam_WetDryMix`): equal-power crossfade percent, 0 (all dry) …
        /// 100 (all wet), default 50.
        public static let wetDryMix: AudioUnitParameterID = 0
        /// DelayTime (`kDelayParam_DelayTime`): seconds, 0…2, default 1.
        public static let delayTime: AudioUnitParameterID = 1
        /// Feedback (`kDelayParam_Feedback`): percent, −99.9…99.9, default 50 (Apple's header
        /// allows ±100, a loop that never decays; here the loop always does). Negative values
        /// invert every other repeat.
        public static let feedback: AudioUnitParameterID = 2
        /// LopassCutoff (`kDelayParam_LopassCutoff`): Hz, 10…sampleRate/2, default 15000 — the
        /// low-pass in the feedback loop. The design frequency is capped at 0.49 × sampleRate.
        public static let lopassCutoff: AudioUnitParameterID = 3
    }

    /// The longest DelayTime, in seconds (the line's length): 2.
    public static var maximumDelayTime: Double { DelayState.maximumSeconds }

    /// Creates a stereo delay with Apple's defaults: 1 s, 50 % feedback, 50 % mix, 15 kHz low-pass.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .delay, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.wetDryMix, name: "WetDryMix", scope: .global, unit: .equalPowerCrossfade,
                                minValue: 0, maxValue: 100, defaultValue: 50, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.delayTime, name: "DelayTime", scope: .global, unit: .seconds,
                                minValue: 0, maxValue: Float(maximumDelayTime), defaultValue: 1, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.feedback, name: "Feedback", scope: .global, unit: .percent,
                                minValue: -99.9, maxValue: 99.9, defaultValue: 50, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.lopassCutoff, name: "LopassCutoff", scope: .global, unit: .hertz,
                                minValue: 10, maxValue: 24_000, defaultValue: 15_000, clampsToRange: true)]
    }

    override func maxValue(of info: AudioUnitParameterInfo) -> Float {
        info.id == Parameter.lopassCutoff ? max(info.minValue, Float(currentSampleRate / 2)) : info.maxValue
    }

    /// DelayTime × the repeats until they are 60 dB down (DelayTime alone without feedback).
    override var tailTime: Double {
        let time = Double(bank.load(1)), feedback = abs(Double(bank.load(2))) / 100
        guard feedback > 0 else { return time }
        return time * (1 + (Glibc.log(1e-3) / Glibc.log(min(feedback, 0.999))).rounded(.up))
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .delay }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int, sampleRate: Double) -> Int {
        DelayState.byteCount(channels: outputChannels, sampleRate: Float(sampleRate))
    }
}

/// The delay kernel's state: the loop low-pass's ``BiquadFilterState``, this header, `[channel]`
/// ``BiquadMemory64`` for the low-pass, then `[channel][capacity]` lines. Trivial; zeroed memory
/// is a valid state (not started: the first render starts at the parameters, lines silent).
struct DelayState {
    /// Ring position of the next frame written (the same for every channel).
    var write: Int
    /// The delay now, in frames (glides toward DelayTime).
    var delay: Double
    /// Feedback fraction and gains reached at the end of the last run (ramps start here).
    var feedback: Float
    var dry: Float
    var wet: Float
    /// The WetDryMix the target gains were made for, and those gains.
    var mix: Float
    var targetDry: Float
    var targetWet: Float
    /// The rate the state was started at; 0 = not started.
    var designRate: Float

    /// The longest delay, in seconds.
    static var maximumSeconds: Double { @_noLocks @inline(__always) get { 2 } }

    /// Frames per line at `sampleRate`: 2 s and the interpolation's margin, a power of two.
    @_noLocks @inline(__always)
    static func capacity(sampleRate: Float) -> Int {
        DelayLine.capacity(maximumDelay: Int(Double(sampleRate) * maximumSeconds) + 1)
    }

    /// Bytes for `channels` lines at `sampleRate`.
    static func byteCount(channels: Int, sampleRate: Float) -> Int {
        MemoryLayout<BiquadFilterState>.stride + MemoryLayout<DelayState>.stride
            + channels * (MemoryLayout<BiquadMemory64>.stride + capacity(sampleRate: sampleRate) * MemoryLayout<Float>.stride)
    }

    /// The header, after the low-pass's design state.
    @_noLocks @inline(__always)
    static func header(_ state: UnsafeMutableRawPointer) -> UnsafeMutablePointer<DelayState> {
        (state + MemoryLayout<BiquadFilterState>.stride).assumingMemoryBound(to: DelayState.self)
    }

    /// `[channel]` low-pass memory.
    @_noLocks @inline(__always)
    static func memory(_ state: UnsafeMutableRawPointer) -> UnsafeMutablePointer<BiquadMemory64> {
        UnsafeMutableRawPointer(header(state) + 1).assumingMemoryBound(to: BiquadMemory64.self)
    }

    /// Channel `c`'s line, `capacity` floats.
    @_noLocks @inline(__always)
    static func line(_ state: UnsafeMutableRawPointer, channels: Int, capacity: Int, _ c: Int) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer(memory(state) + channels).assumingMemoryBound(to: Float.self) + c * capacity
    }
}

/// The delay's kernel: reads the four parameters, glides the delay and the loop's cutoff, and
/// runs ``DelayLine/feedback(line:mask:write:input:output:frames:run:lowPass:memory:)`` per channel.
enum DelayKernel {
    /// Time constant of the delay-time glide, in seconds.
    static var glideTime: Double { @_noLocks @inline(__always) get { 0.05 } }
    /// The fastest the delay changes while it glides, in frames per frame.
    static var maximumSlew: Double { @_noLocks @inline(__always) get { 0.5 } }

    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let rate = s.sampleRate, p = s.parameters
        let lowPass = s.state.assumingMemoryBound(to: BiquadFilterState.self)
        let state = DelayState.header(s.state), memory = DelayState.memory(s.state)
        let channels = s.outputChannelCount
        let capacity = DelayState.capacity(sampleRate: rate), mask = capacity - 1
        // Bank slots: 0 WetDryMix, 1 DelayTime, 2 Feedback, 3 LopassCutoff.
        let mix = loadParameter(p, 0)
        let starting = state.pointee.designRate != rate
        if mix != state.pointee.mix || starting {
            let angle = Double.pi / 2 * Double(min(max(mix, 0), 100)) / 100
            state.pointee.mix = mix
            // cos(π/2) is 6e-17, not 0: all wet and all dry are exact.
            let dry = RealTime.cos(angle), wet = RealTime.sin(angle)
            state.pointee.targetDry = dry < 1e-9 ? 0 : Float(dry)
            state.pointee.targetWet = wet < 1e-9 ? 0 : Float(wet)
        }
        var targetDelay = min(max(1, Double(loadParameter(p, 1)) * Double(rate)), Double(capacity - 2))
        // Float seconds cannot say most whole frames (0.01 s is 479.99999 frames): within
        // 1/10000 of a frame, the whole frame.
        let whole = RealTime.rint(targetDelay)
        if abs(targetDelay - whole) < 1e-4 { targetDelay = whole }
        let targetFeedback = min(max(loadParameter(p, 2) / 100, -0.999), 0.999)
        let cutoff = BiquadTarget(design: BiquadDesign(.lowPass, .butterworth), frequency: loadParameter(p, 3), shape: 0, gain: 0)
        if starting || piece.snapsParameters {
            state.pointee.delay = targetDelay
            state.pointee.feedback = targetFeedback
            state.pointee.dry = state.pointee.targetDry
            state.pointee.wet = state.pointee.targetWet
            state.pointee.designRate = rate
        }
        BiquadFilter.begin(lowPass, toward: cutoff, sampleRate: rate, snaps: piece.snapsParameters)
        let input = s.inputs[0].channels, inChannels = s.inputs[0].channelCount
        var done = 0
        while done < piece.frames {
            var n = piece.frames - done
            let delay = state.pointee.delay
            if delay != targetDelay { n = min(n, BiquadFilter.glidePiece) }
            n = BiquadFilter.advance(lowPass, toward: cutoff, sampleRate: rate, frames: n)
            var next = delay
            if delay != targetDelay {
                let k = 1 - RealTime.exp(-Double(n) / (glideTime * Double(rate)))
                let limit = maximumSlew * Double(n)
                next = delay + min(max((targetDelay - delay) * k, -limit), limit)
                if abs(next - targetDelay) < 1e-3 { next = targetDelay }
            }
            let run = FeedbackDelayRun(delay0: delay, delay1: next, feedback0: state.pointee.feedback, feedback1: targetFeedback,
                                       dry0: state.pointee.dry, dry1: state.pointee.targetDry,
                                       wet0: state.pointee.wet, wet1: state.pointee.targetWet)
            let coefficients = lowPass.pointee.coefficients
            for c in 0..<channels {
                var source: UnsafePointer<Float>?
                if let input, c < inChannels { source = UnsafePointer(input[c] + piece.offset + done) }
                DelayLine.feedback(line: DelayState.line(s.state, channels: channels, capacity: capacity, c), mask: mask,
                                   write: state.pointee.write, input: source, output: s.output[c] + piece.offset + done,
                                   frames: n, run: run, lowPass: coefficients, memory: &memory[c])
            }
            state.pointee.write = (state.pointee.write + n) & mask
            state.pointee.delay = next
            state.pointee.feedback = targetFeedback
            state.pointee.dry = state.pointee.targetDry
            state.pointee.wet = state.pointee.targetWet
            done += n
        }
    }
}
