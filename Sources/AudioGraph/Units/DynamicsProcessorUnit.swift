// Units: the dynamics processor (kAudioUnitSubType_DynamicsProcessor) — a compressor/expander — and its kernel.
import Synchronization

/// A compressor and downward expander with Apple's headroom model: the
/// `kAudioUnitSubType_DynamicsProcessor` analogue.
///
/// Per frame: a smooth branching peak detector (`PeakDetector`, AttackTime and ReleaseTime as
/// its time constants) follows the largest |sample| over the channels; its level L (dBFS) goes
/// through the static curve (`DynamicsCurve`: Giannoulis, Massberg and Reiss, JAES 2012, with a
/// fixed 6 dB soft knee at each threshold), and every channel is multiplied by
/// 10^((G(L) + OverallGain) / 20). The compression ratio is not a parameter (as in Apple's unit):
/// R = −Threshold / HeadRoom (at least 1), so a 0 dBFS input comes out at Threshold + HeadRoom
/// dBFS, before OverallGain; below ExpansionThreshold the level falls ExpansionRatio dB per dB.
///
/// While the detector's level is between the two knees (ExpansionThreshold + 3 dB …
/// Threshold − 3 dB) the curve is exactly 0 dB and a frame costs one comparison; with
/// OverallGain at 0 dB the samples then pass bit for bit.
///
/// Parameter changes keep the detector's state. Threshold, HeadRoom, ExpansionThreshold,
/// ExpansionRatio and OverallGain move linearly across the next slice (or the automation's
/// piece), so a change does not click; AttackTime and ReleaseTime apply from the next piece.
///
/// The read-only parameters are meters the render thread publishes at the end of every piece
/// (relaxed atomics, read from any thread with ``AudioUnit/parameter(_:scope:element:)``; setting
/// them throws ``AudioUnitError/invalidParameter``). Levels are floored at −120 dBFS.
///
/// Input and output have the same format (setting either sets both).
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class DynamicsProcessorUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0). Mirror `kDynamicsProcessorParam_*`.
    public enum Parameter {
        /// Threshold: dBFS, −40…20, default −20 (`kDynamicsProcessorParam_Threshold`). Levels
        /// above it are compressed.
        public static let threshold: AudioUnitParameterID = 0
        /// HeadRoom: dB, 0.1…40, default 5 (`kDynamicsProcessorParam_HeadRoom`). A 0 dBFS input
        /// comes out at Threshold + HeadRoom; smaller headroom, harder compression.
        public static let headRoom: AudioUnitParameterID = 1
        /// ExpansionRatio: rate, 1…50, default 2 (`kDynamicsProcessorParam_ExpansionRatio`).
        /// Below ExpansionThreshold the output level falls this many dB per dB of input.
        public static let expansionRatio: AudioUnitParameterID = 2
        /// ExpansionThreshold: dBFS, −120…0, default −100 (`kDynamicsProcessorParam_ExpansionThreshold`).
        /// Apple's header gives the unit (dB) but no range; the range is ours.
        public static let expansionThreshold: AudioUnitParameterID = 3
        /// AttackTime: seconds, 0.0001…0.2, default 0.001 (`kDynamicsProcessorParam_AttackTime`):
        /// the detector's time constant while the level rises.
        public static let attackTime: AudioUnitParameterID = 4
        /// ReleaseTime: seconds, 0.01…3, default 0.05 (`kDynamicsProcessorParam_ReleaseTime`):
        /// the detector's time constant while the level falls.
        public static let releaseTime: AudioUnitParameterID = 5
        /// OverallGain: dB, −40…40, default 0 (`kDynamicsProcessorParam_OverallGain`, formerly
        /// `kDynamicsProcessorParam_MasterGain`): make-up gain after the curve.
        public static let overallGain: AudioUnitParameterID = 6
        /// CompressionAmount: dB, read-only (`kDynamicsProcessorParam_CompressionAmount`): the
        /// curve's gain G(L) at the end of the last piece, ≤ 0 (−6 means 6 dB of gain reduction,
        /// from compression and expansion together; OverallGain not included).
        public static let compressionAmount: AudioUnitParameterID = 1000
        /// InputAmplitude: dBFS, read-only (`kDynamicsProcessorParam_InputAmplitude`): the
        /// detector's level L at the end of the last piece, −120….
        public static let inputAmplitude: AudioUnitParameterID = 2000
        /// OutputAmplitude: dBFS, read-only (`kDynamicsProcessorParam_OutputAmplitude`):
        /// L + G(L) + OverallGain at the end of the last piece.
        public static let outputAmplitude: AudioUnitParameterID = 3000
    }

    /// The knee width of both thresholds, in dB (AUDynamicsProcessor has no knee parameter).
    public static let kneeWidth: Float = 6

    /// Creates a stereo dynamics processor with Apple's defaults (Threshold −20 dB, HeadRoom
    /// 5 dB: a 4:1 ratio; expansion 2:1 below −100 dB; attack 1 ms, release 50 ms).
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .dynamicsProcessor, inputFormats: [stereo], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.threshold, name: "Threshold", unit: .decibels,
                                minValue: -40, maxValue: 20, defaultValue: -20),
         AudioUnitParameterInfo(id: Parameter.headRoom, name: "HeadRoom", unit: .decibels,
                                minValue: 0.1, maxValue: 40, defaultValue: 5),
         AudioUnitParameterInfo(id: Parameter.expansionRatio, name: "ExpansionRatio", unit: .rate,
                                minValue: 1, maxValue: 50, defaultValue: 2),
         AudioUnitParameterInfo(id: Parameter.expansionThreshold, name: "ExpansionThreshold", unit: .decibels,
                                minValue: -120, maxValue: 0, defaultValue: -100),
         AudioUnitParameterInfo(id: Parameter.attackTime, name: "AttackTime", unit: .seconds,
                                minValue: 0.0001, maxValue: 0.2, defaultValue: 0.001),
         AudioUnitParameterInfo(id: Parameter.releaseTime, name: "ReleaseTime", unit: .seconds,
                                minValue: 0.01, maxValue: 3, defaultValue: 0.05),
         AudioUnitParameterInfo(id: Parameter.overallGain, name: "OverallGain", unit: .decibels,
                                minValue: -40, maxValue: 40, defaultValue: 0),
         AudioUnitParameterInfo(id: Parameter.compressionAmount, name: "CompressionAmount", unit: .decibels,
                                minValue: -240, maxValue: 0, defaultValue: 0, isReadOnly: true),
         AudioUnitParameterInfo(id: Parameter.inputAmplitude, name: "InputAmplitude", unit: .decibels,
                                minValue: -120, maxValue: 40, defaultValue: -120, isReadOnly: true),
         AudioUnitParameterInfo(id: Parameter.outputAmplitude, name: "OutputAmplitude", unit: .decibels,
                                minValue: -120, maxValue: 40, defaultValue: -120, isReadOnly: true)]
    }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .dynamics }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<DynamicsState>.stride }
    // The meters' slots: the render thread stores into the unit's bank (read-only slots nothing
    // else writes), so parameter() reads them from any thread.
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        state.bindMemory(to: DynamicsState.self, capacity: 1).initialize(to: DynamicsState(meters: bank.values + DynamicsKernel.meterSlot))
    }
}

/// The dynamics kernel's state: the detector's envelope, the parameters the last piece ended
/// with (new values glide from them), and where the meters go. Trivial.
struct DynamicsState {
    /// The detector's envelope: linear amplitude, ≥ 0.
    var envelope: Float = 0
    /// Threshold, HeadRoom, ExpansionThreshold, ExpansionRatio, OverallGain (dB) at the end of
    /// the last piece; `started` false until the first piece.
    var threshold: Float = 0, headRoom: Float = 0, expansionThreshold: Float = 0, expansionRatio: Float = 0, gain: Float = 0
    var started = false
    /// The unit's bank slots for CompressionAmount, InputAmplitude, OutputAmplitude.
    var meters: UnsafeMutablePointer<Atomic<UInt32>>

    init(meters: UnsafeMutablePointer<Atomic<UInt32>>) { self.meters = meters }
}

/// The dynamics processor's kernel: the detector, the curve, the gain, the meters.
enum DynamicsKernel {
    /// Bank slot of the first meter (CompressionAmount): after the seven settable parameters.
    static var meterSlot: Int { @_noLocks @inline(__always) get { 7 } }
    /// 20 / ln 10: dB per natural-log unit of amplitude.
    static var decibelsPerNeper: Float { @_noLocks @inline(__always) get { 8.685889638065035 } }
    /// Envelopes below this (−200 dBFS) are set to 0, so silence never leaves it in subnormals.
    static var floor: Float { @_noLocks @inline(__always) get { 1e-10 } }
    /// Frames whose gains are computed before they are applied channel by channel.
    static var block: Int { @_noLocks @inline(__always) get { 64 } }

    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: DynamicsState.self)
        let p = s.parameters
        // Bank slots: the definitions' order (0 Threshold, 1 HeadRoom, 2 ExpansionRatio,
        // 3 ExpansionThreshold, 4 AttackTime, 5 ReleaseTime, 6 OverallGain, 7… the meters).
        let t1 = loadParameter(p, 0), h1 = loadParameter(p, 1), r1 = loadParameter(p, 2)
        let e1 = loadParameter(p, 3), m1 = loadParameter(p, 6)
        let attack = PeakDetector.coefficient(seconds: loadParameter(p, 4), sampleRate: s.sampleRate)
        let release = PeakDetector.coefficient(seconds: loadParameter(p, 5), sampleRate: s.sampleRate)
        var st = state.pointee
        if !st.started || piece.snapsParameters {
            st.threshold = t1; st.headRoom = h1; st.expansionRatio = r1; st.expansionThreshold = e1; st.gain = m1
            st.started = true
        }
        let frames = piece.frames, offset = piece.offset
        let out = s.output
        let channels = s.outputChannelCount
        let knee = DynamicsProcessorUnit.kneeWidth
        var envelope = st.envelope
        var lastGain: Float = 0
        if let input = s.inputs[0].channels {
            let inChannels = min(s.inputs[0].channelCount, channels)
            let moving = st.threshold != t1 || st.headRoom != h1 || st.expansionRatio != r1
                || st.expansionThreshold != e1 || st.gain != m1
            // With the curve fixed, levels between the knees get exactly 0 dB: one comparison.
            let curve = DynamicsCurve.headroom(threshold: t1, headroom: h1, expansionThreshold: e1, expansionRatio: r1, knee: knee)
            let unity = curve.unityRange
            var low = Float.infinity, high = -Float.infinity
            if !moving && unity.low < unity.high {
                low = Float(RealTime.pow(10, Double(unity.low) / 20))
                high = Float(RealTime.pow(10, Double(unity.high) / 20))
            }
            let makeup = Float(RealTime.pow(10, Double(m1) / 20))
            let n = Float(max(frames, 1))
            var gains = InlineArray<64, Float>(repeating: 0)
            var start = 0
            while start < frames {
                let count = min(block, frames - start)
                // 1. The largest |sample| of each frame over the channels.
                for f in 0..<count { gains[f] = 0 }
                for c in 0..<inChannels {
                    let src = input[c] + offset + start
                    for f in 0..<count { gains[f] = max(gains[f], abs(src[f])) }
                }
                // 2. Detector and curve: each frame's gain.
                for f in 0..<count {
                    envelope = PeakDetector.step(envelope, gains[f], attack: attack, release: release)
                    if envelope >= low && envelope <= high {
                        lastGain = 0
                        gains[f] = makeup
                    } else if !moving {
                        lastGain = curve.gain(decibelsPerNeper * RealTime.logf(max(envelope, floor)))
                        gains[f] = RealTime.expf((lastGain + m1) / decibelsPerNeper)
                    } else {
                        // Parameters moving: each frame on its own curve, linear across the piece.
                        let k = Float(start + f + 1) / n
                        let here = DynamicsCurve.headroom(
                            threshold: st.threshold + (t1 - st.threshold) * k, headroom: st.headRoom + (h1 - st.headRoom) * k,
                            expansionThreshold: st.expansionThreshold + (e1 - st.expansionThreshold) * k,
                            expansionRatio: st.expansionRatio + (r1 - st.expansionRatio) * k, knee: knee)
                        lastGain = here.gain(decibelsPerNeper * RealTime.logf(max(envelope, floor)))
                        gains[f] = RealTime.expf((lastGain + st.gain + (m1 - st.gain) * k) / decibelsPerNeper)
                    }
                }
                // 3. Every channel times the frame's gain.
                for c in 0..<inChannels {
                    let src = input[c] + offset + start, dst = out[c] + offset + start
                    for f in 0..<count { dst[f] = src[f] * gains[f] }
                }
                start += count
            }
            for c in inChannels..<channels { (out[c] + offset).update(repeating: 0, count: frames) }
        } else {
            // No input: silence out, the detector releasing toward zero.
            for c in 0..<channels { (out[c] + offset).update(repeating: 0, count: frames) }
            if frames > 0 { envelope *= Float(RealTime.pow(Double(release), Double(frames))) }
            lastGain = DynamicsCurve.headroom(threshold: t1, headroom: h1, expansionThreshold: e1, expansionRatio: r1, knee: knee)
                .gain(decibelsPerNeper * RealTime.logf(max(envelope, floor)))
        }
        st.threshold = t1; st.headRoom = h1; st.expansionRatio = r1; st.expansionThreshold = e1; st.gain = m1
        // Below the floor, or NaN/Inf after a non-finite input (an Inf would otherwise hold
        // the envelope there for ever): exact zero.
        if !(envelope >= floor && envelope <= .greatestFiniteMagnitude) { envelope = 0 }
        st.envelope = envelope
        state.pointee = st
        if frames > 0 {
            // Meters: relaxed stores into the unit's read-only bank slots.
            let level = max(-120, decibelsPerNeper * RealTime.logf(max(envelope, floor)))
            st.meters[0].store(lastGain.bitPattern, ordering: .relaxed)
            st.meters[1].store(level.bitPattern, ordering: .relaxed)
            st.meters[2].store(max(-120, level + lastGain + m1).bitPattern, ordering: .relaxed)
        }
    }
}
