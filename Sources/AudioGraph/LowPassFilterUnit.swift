#if canImport(Glibc)
import Glibc
#endif

/// A second-order (12 dB/octave) low-pass filter: the `kAudioUnitSubType_LowPassFilter` analogue.
///
/// Design: the RBJ Audio EQ Cookbook low-pass biquad (Robert Bristow-Johnson), run in direct
/// form I per channel. Direct form I keeps the past inputs and outputs as its state, so a new
/// set of coefficients continues from the same signal without the transient that transposed
/// forms show when coefficients change. Resonance sets the gain at the cutoff: Q = 10^(resonance/20) / √2,
/// so 0 dB resonance is a Butterworth response, −3.01 dB at the cutoff. Coefficients are
/// recomputed at the start of a slice when a parameter changed; the filter memory is kept, so
/// changes never reset the signal.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
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
    override func kernelStateCount(inputChannels: [Int], outputChannels: Int) -> Int {
        LowPassKernel.stateBase + 4 * outputChannels
    }
}

enum LowPassKernel {
    // State layout: [0…4] b0 b1 b2 a1 a2, [5] cutoff, [6] resonance, [7] sample rate the
    // coefficients were made for (0 = none yet), then x[n−1], x[n−2], y[n−1], y[n−2] per channel.
    static let stateBase = 8

    /// RBJ cookbook LPF: w0 = 2π f/fs, α = sin(w0)/(2Q), b0 = b2 = (1−cos w0)/2, b1 = 1−cos w0,
    /// a0 = 1+α, a1 = −2 cos w0, a2 = 1−α, all divided by a0.
    @_noLocks
    static func updateCoefficients(_ st: UnsafeMutablePointer<Float>, cutoff: Float, resonance: Float, sampleRate: Float) {
        let fs = Double(sampleRate)
        let f = min(max(Double(cutoff), 10), 0.49 * fs)
        let q = _unsafePerformance { pow(10, Double(resonance) / 20) } * 0.7071067811865476  // 1/√2
        let w0 = 2 * Double.pi * f / fs
        let cosw = _unsafePerformance { cos(w0) }
        let sinw = _unsafePerformance { sin(w0) }
        let alpha = sinw / (2 * q)
        let a0 = 1 + alpha
        st[0] = Float((1 - cosw) / 2 / a0)
        st[1] = Float((1 - cosw) / a0)
        st[2] = st[0]
        st[3] = Float(-2 * cosw / a0)
        st[4] = Float((1 - alpha) / a0)
        st[5] = cutoff
        st[6] = resonance
        st[7] = sampleRate
    }

    /// Denormals: a decaying recursive filter fed silence drifts into subnormal numbers, which
    /// many CPUs process tens of times slower, and can hang there. State below 1e-30 (−600 dBFS)
    /// is set to exact zero at the end of each slice, so silence in gives exact zeros out.
    @_noLocks @inline(__always)
    static func flush(_ x: Float) -> Float { abs(x) < 1e-30 ? 0 : x }

    /// Time constant of the cutoff glide: a cutoff change is approached exponentially in
    /// log-frequency, τ = 5 ms, with fresh coefficients every 32 frames (so sweeps and jumps
    /// never click; the usual parameter de-zippering, e.g. JUCE's SmoothedValue, done in
    /// octaves). Scheduled immediate changes (`snap`) jump instead.
    static let glideTime: Double = 0.005
    static let glidePiece = 32

    /// Renders frames `offset..<offset + frames`, gliding the design cutoff toward the parameter.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, offset: Int, frames: Int, snap: Bool) {
        let s = step.pointee
        let st = s.state
        let target = loadParameter(s.parameters, 0)
        let resonance = loadParameter(s.parameters, 1)
        if st[7] != s.sampleRate || snap {
            updateCoefficients(st, cutoff: target, resonance: resonance, sampleRate: s.sampleRate)
        } else if st[6] != resonance {
            updateCoefficients(st, cutoff: st[5], resonance: resonance, sampleRate: s.sampleRate)
        }
        if st[5] == target {
            process(step, offset: offset, frames: frames)
            return
        }
        var done = 0
        while done < frames {
            var n = frames - done
            if st[5] != target {
                n = min(n, glidePiece)
                let k = 1 - _unsafePerformance { exp(-Double(n) / (glideTime * Double(s.sampleRate))) }
                let from = _unsafePerformance { log(Double(st[5])) }, to = _unsafePerformance { log(Double(target)) }
                var next = Float(_unsafePerformance { exp(from + (to - from) * k) })
                if abs(next - target) <= target * 1e-3 { next = target }
                updateCoefficients(st, cutoff: next, resonance: resonance, sampleRate: s.sampleRate)
            }
            process(step, offset: offset + done, frames: n)
            done += n
        }
    }

    /// The biquad over frames `offset..<offset + frames` with the current coefficients.
    @_noLocks
    static func process(_ step: UnsafeMutablePointer<PlanStep>, offset: Int, frames: Int) {
        let s = step.pointee
        let st = s.state
        let b0 = st[0], b1 = st[1], b2 = st[2], a1 = st[3], a2 = st[4]
        let out = s.output
        let input = s.inputs[0].channels
        let inChannels = s.inputs[0].channelCount
        // Channels in pairs: two independent recurrences per iteration keep the FPU busy while
        // each waits on its own previous output (the loop is latency-bound, not throughput-bound).
        // Each channel's arithmetic is unchanged, so the result is bit-identical to one at a time.
        var first = 0
        if let input, inChannels >= 2 {
            while first + 1 < min(s.outputChannelCount, inChannels) {
                let za = st + stateBase + 4 * first, zb = za + 4
                // Both channels as the two lanes of one vector: the same operations in the same
                // order per lane, so each channel's result is bit-identical to one at a time.
                var x1 = SIMD2<Float>(za[0], zb[0]), x2 = SIMD2<Float>(za[1], zb[1])
                var y1 = SIMD2<Float>(za[2], zb[2]), y2 = SIMD2<Float>(za[3], zb[3])
                let vb0 = SIMD2<Float>(repeating: b0), vb1 = SIMD2<Float>(repeating: b1), vb2 = SIMD2<Float>(repeating: b2)
                let va1 = SIMD2<Float>(repeating: a1), va2 = SIMD2<Float>(repeating: a2)
                let srcA = input[first] + offset, srcB = input[first + 1] + offset
                let dstA = out[first] + offset, dstB = out[first + 1] + offset
                for f in 0..<frames {
                    let x = SIMD2<Float>(srcA[f], srcB[f])
                    let y = vb0 * x + vb1 * x1 + vb2 * x2 - va1 * y1 - va2 * y2
                    x2 = x1; x1 = x; y2 = y1; y1 = y
                    dstA[f] = y[0]
                    dstB[f] = y[1]
                }
                za[0] = flush(x1[0]); za[1] = flush(x2[0]); za[2] = flush(y1[0]); za[3] = flush(y2[0])
                zb[0] = flush(x1[1]); zb[1] = flush(x2[1]); zb[2] = flush(y1[1]); zb[3] = flush(y2[1])
                first += 2
            }
        }
        for c in first..<s.outputChannelCount {
            let z = st + stateBase + 4 * c
            var x1 = z[0], x2 = z[1], y1 = z[2], y2 = z[3]
            let dst = out[c] + offset
            if let input, c < inChannels {
                let src = input[c] + offset
                for f in 0..<frames {
                    let x = src[f]
                    let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                    x2 = x1; x1 = x
                    y2 = y1; y1 = y
                    dst[f] = y
                }
            } else {
                for f in 0..<frames {
                    let y = b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
                    x2 = x1; x1 = 0
                    y2 = y1; y1 = y
                    dst[f] = y
                }
            }
            z[0] = flush(x1); z[1] = flush(x2); z[2] = flush(y1); z[3] = flush(y2)
        }
    }
}
