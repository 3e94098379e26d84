// Units: the low-pass filter unit (kAudioUnitSubType_LowPassFilter) and its kernel.
#if canImport(Glibc)
import Glibc
#endif

/// A second-order (12 dB/octave) low-pass filter: the `kAudioUnitSubType_LowPassFilter` analogue.
///
/// Design: the RBJ Audio EQ Cookbook low-pass biquad (Robert Bristow-Johnson), run in direct
/// form I per channel (`Biquad`). Direct form I keeps the past inputs and outputs as its state, so a new
/// set of coefficients continues from the same signal without the transient that transposed
/// forms show when coefficients change. Resonance sets the gain at the cutoff: Q = 10^(resonance/20) / √2,
/// so 0 dB resonance is a Butterworth response, −3.01 dB at the cutoff. Coefficients are
/// recomputed at the start of a slice when a parameter changed; the filter memory is kept, so
/// changes never reset the signal.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class LowPassFilterUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kLowPassParam_*`.
    public enum Parameter {
        /// CutoffFrequency: Hz, 10…sampleRate/2, default 6900. The design frequency is capped
        /// at 0.49 × sampleRate so the filter stays stable at the top of the range.
        public static let cutoffFrequency: AudioUnitParameterID = 0
        /// Resonance: dB, −20…40, default 0.
        public static let resonance: AudioUnitParameterID = 1
    }

    /// Creates a stereo filter with the default cutoff (6900 Hz) and resonance (0 dB).
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .lowPassFilter, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.cutoffFrequency, name: "CutoffFrequency", scope: .global, unit: .hertz,
                                minValue: 10, maxValue: 24_000, defaultValue: 6900, clampsToRange: true),
         AudioUnitParameterInfo(id: Parameter.resonance, name: "Resonance", scope: .global, unit: .decibels,
                                minValue: -20, maxValue: 40, defaultValue: 0, clampsToRange: true)]
    }

    override func maxValue(of info: AudioUnitParameterInfo) -> Float {
        info.id == Parameter.cutoffFrequency ? Float(currentSampleRate / 2) : info.maxValue
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .lowPass }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        LowPassState.byteCount(channels: outputChannels)
    }
}

/// The low-pass kernel's state: the coefficients in use and what they were designed for,
/// followed in memory by one ``BiquadMemory`` per output channel. Trivial; zeroed memory is a
/// valid state (no coefficients yet, silent memory).
struct LowPassState {
    var coefficients: BiquadCoefficients
    /// The cutoff (Hz) the coefficients were made for; glides toward the parameter.
    var cutoff: Float
    /// The resonance (dB) they were made for.
    var resonance: Float
    /// The sample rate they were made for; 0 = none yet.
    var designRate: Float

    /// Bytes for the state of a filter with `channels` channels.
    static func byteCount(channels: Int) -> Int {
        MemoryLayout<LowPassState>.stride + channels * MemoryLayout<BiquadMemory>.stride
    }

    /// `[channel]` filter memory, right after the state.
    @_noLocks @inline(__always)
    static func memory(_ state: UnsafeMutablePointer<LowPassState>) -> UnsafeMutablePointer<BiquadMemory> {
        UnsafeMutableRawPointer(state + 1).assumingMemoryBound(to: BiquadMemory.self)
    }

    /// New coefficients: the RBJ low-pass at `cutoff` with Q = 10^(resonance/20) / √2.
    @_noLocks
    mutating func design(cutoff: Float, resonance: Float, sampleRate: Float) {
        let q = RealTime.pow(10, Double(resonance) / 20) * 0.7071067811865476  // 1/√2
        coefficients = .lowPass(cutoff: cutoff, q: q, sampleRate: sampleRate)
        self.cutoff = cutoff
        self.resonance = resonance
        designRate = sampleRate
    }
}

/// The low-pass unit's kernel: reads CutoffFrequency and Resonance, glides the design cutoff,
/// and runs a ``Biquad`` per channel.
enum LowPassKernel {
    /// Time constant of the cutoff glide, in seconds: a cutoff change is approached
    /// exponentially in log-frequency, τ = 5 ms, with fresh coefficients every ``glidePiece``
    /// frames (so sweeps and jumps never click; the usual parameter de-zippering, e.g. JUCE's
    /// SmoothedValue, done in octaves). Scheduled immediate changes (`snapsParameters`) jump instead.
    static var glideTime: Double { @_noLocks @inline(__always) get { 0.005 } }
    /// Frames rendered with one set of coefficients while the cutoff glides.
    static var glidePiece: Int { @_noLocks @inline(__always) get { 32 } }

    /// Renders one piece, gliding the design cutoff toward the parameter. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: LowPassState.self)
        // Bank slots: the global parameters in definition order (0 CutoffFrequency, 1 Resonance).
        let target = loadParameter(s.parameters, 0)
        let resonance = loadParameter(s.parameters, 1)
        if state.pointee.designRate != s.sampleRate || piece.snapsParameters {
            state.pointee.design(cutoff: target, resonance: resonance, sampleRate: s.sampleRate)
        } else if state.pointee.resonance != resonance {
            state.pointee.design(cutoff: state.pointee.cutoff, resonance: resonance, sampleRate: s.sampleRate)
        }
        if state.pointee.cutoff == target {
            process(step, state, offset: piece.offset, frames: piece.frames)
            return
        }
        var done = 0
        while done < piece.frames {
            var n = piece.frames - done
            let cutoff = state.pointee.cutoff
            if cutoff != target {
                n = min(n, glidePiece)
                let k = 1 - RealTime.exp(-Double(n) / (glideTime * Double(s.sampleRate)))
                let from = RealTime.log(Double(cutoff)), to = RealTime.log(Double(target))
                var next = Float(RealTime.exp(from + (to - from) * k))
                if abs(next - target) <= target * 1e-3 { next = target }
                state.pointee.design(cutoff: next, resonance: resonance, sampleRate: s.sampleRate)
            }
            process(step, state, offset: piece.offset + done, frames: n)
            done += n
        }
    }

    /// The biquad over frames `offset..<offset + frames` of every channel with the current
    /// coefficients; channels in pairs as vector lanes (bit-identical to one at a time).
    @_noLocks
    static func process(_ step: UnsafeMutablePointer<PlanStep>, _ state: UnsafeMutablePointer<LowPassState>, offset: Int, frames: Int) {
        let s = step.pointee
        let coefficients = state.pointee.coefficients
        let memory = LowPassState.memory(state)
        let out = s.output
        let input = s.inputs[0].channels
        let inChannels = s.inputs[0].channelCount
        var first = 0
        if let input, inChannels >= 2 {
            while first + 1 < min(s.outputChannelCount, inChannels) {
                Biquad.processPair(coefficients, &memory[first], &memory[first + 1],
                                   inputs: (UnsafePointer(input[first] + offset), UnsafePointer(input[first + 1] + offset)),
                                   outputs: (out[first] + offset, out[first + 1] + offset), frames: frames)
                first += 2
            }
        }
        for c in first..<s.outputChannelCount {
            var source: UnsafePointer<Float>?
            if let input, c < inChannels { source = UnsafePointer(input[c] + offset) }
            Biquad.process(coefficients, &memory[c], input: source, output: out[c] + offset, frames: frames)
        }
    }
}
