// Observers: LoudnessMeter — EBU R128 / ITU-R BS.1770 loudness (LUFS) and true peak of a node's output, through libebur128, off the render thread.
import CEBUR128
#if canImport(Glibc)
import Glibc
#endif

/// Loudness of one output element of a node as EBU R128 measures it: momentary, short-term and
/// integrated loudness in LUFS, loudness range in LU, and true peak in dBTP.
///
/// The render thread only copies the element's samples into a tap's ring (as ``AudioTap``
/// does, lock-free); the tap's thread feeds them, a tenth of a second at a time, to libebur128
/// (Jan Kokemüller's implementation of ITU-R BS.1770-4 and EBU Tech 3341/3342, MIT, Debian's
/// `libebur128-dev`), which the readings ask under a lock. So a reading lags the render by up to
/// 0.1 s plus a render cycle; ``stop()`` delivers everything first.
///
/// ## What the numbers mean (EBU R128, ITU-R BS.1770-4)
/// - **Momentary** loudness: the K-weighted mean square of the last 0.4 s, summed over the
///   channels (weights 1 for channels 0–2, 1.41 for 3–4 as libebur128's default map: left,
///   right, centre, left surround, right surround; further channels are not counted), as
///   `−0.691 + 10·log10(Σ)` LUFS. A 1 kHz sine at −23 dBFS on both channels of a stereo signal
///   reads −23.0 LUFS (EBU Tech 3341, test 1); a mono signal counts its one channel once.
/// - **Short-term** loudness: the same over the last 3 s.
/// - **Integrated** loudness: over everything since the start (or ``reset()``), gated: blocks of
///   0.4 s (overlapping by 75 %) below −70 LUFS are left out, then those more than 10 LU below
///   the mean of the rest.
/// - **Loudness range** (EBU Tech 3342): the spread, in LU, between the 10th and 95th percentile
///   of the short-term loudness (3 s windows every 1 s), gated at −70 LUFS and 20 LU below.
/// - **True peak**: the largest absolute value of the signal oversampled 4× (below 96 kHz) or 2×,
///   over all channels since the start, as `20·log10` dBTP.
/// - **Silence**: a reading is nil when there is nothing to measure: no audio yet, digital
///   silence, or (integrated, range) nothing above the gates. Never −infinity or NaN.
///
/// Thread: create and stop on a control thread; readings from any thread (they take a lock the
/// tap's thread holds while it adds 0.1 s of audio; never the render thread).
/// SAFETY (`@unchecked Sendable`): the libebur128 state is only touched under `state`'s lock; the tap is a control-thread property.
public final class LoudnessMeter: @unchecked Sendable {
    /// The node measured.
    public let node: AUNode
    /// The output element measured.
    public let element: AudioUnitElement
    /// The element's rate when the meter was made, in Hz: what it measures at (the tap converts).
    public let sampleRate: Double
    /// The element's channel count when the meter was made: the channels it sums.
    public let channelCount: Int

    private let graph: AudioGraph
    private let state: ControlLock<UnsafeMutablePointer<ebur128_state>?>
    /// What libebur128 measures: everything the readings ask (range, integrated, true peak; they
    /// include momentary, short-term and sample peak).
    private static let mode = Int32(EBUR128_MODE_LRA.rawValue | EBUR128_MODE_I.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue)
    private var tap: AudioTap?

    /// Starts measuring `node`'s output `element` at the next slice it renders.
    /// - Parameters:
    ///   - graph: the graph holding `node`.
    ///   - node: the node measured.
    ///   - element: output element: 0, or for the ``IOUnit`` 1 (device input) or 0 (device output).
    ///   - bufferDuration: seconds of audio the tap's ring holds for the meter's thread,
    ///     0.01…60 (default 2). Live, the thread keeps up easily; an offline render that runs
    ///     many times faster than real time needs the whole render's length, or frames are
    ///     dropped (``framesDropped``) and the readings miss them.
    /// - Throws: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    ///   ``AudioUnitError/invalidPropertyValue`` (a `bufferDuration` out of bounds),
    ///   ``AudioUnitError/formatNotSupported`` (a rate or channel count libebur128 refuses:
    ///   more than 64 channels), ``AudioUnitError/cannotDoInCurrentContext`` (on the render
    ///   thread). Nothing changes on a throw.
    /// - Thread: control thread; allocates; starts the tap's thread.
    public init(graph: AudioGraph, node: AUNode, element: AudioUnitElement = 0, bufferDuration: Double = 2) throws(AudioUnitError) {
        _ = try graph.checkObservable(node, element)
        let source = try graph.nodeInfo(node).streamFormat(scope: .output, element: element)
        let channels = Int(source.channelsPerFrame)
        guard channels <= 64, let measured = ebur128_init(UInt32(channels), UInt(source.sampleRate.rounded()),
                                                          LoudnessMeter.mode)
        else { throw .formatNotSupported }
        self.node = node
        self.element = element
        self.graph = graph
        sampleRate = source.sampleRate
        channelCount = channels
        let state = ControlLock<UnsafeMutablePointer<ebur128_state>?>(measured)
        self.state = state
        let format = try StreamFormat.float32(sampleRate: source.sampleRate, channels: UInt32(channels), interleaved: true)
        do throws(AudioUnitError) {
            tap = try graph.installTap(on: node, element: element, blockFrames: max(1, Int(source.sampleRate / 10)), format: format,
                                       bufferDuration: bufferDuration) { block in
                state.withLock { measured in
                    guard let measured, let bytes = block.buffers.first else { return }
                    bytes.withUnsafeBytes { raw in
                        _ = ebur128_add_frames_float(measured, raw.bindMemory(to: Float.self).baseAddress, block.frameCount)
                    }
                }
            }
        } catch {
            state.withLock { measured in ebur128_destroy(&measured) }
            throw error
        }
    }

    /// A libebur128 reading in LUFS or LU, nil for −infinity (nothing measured) or an error.
    private func reading(_ read: (UnsafeMutablePointer<ebur128_state>, UnsafeMutablePointer<Double>) -> Int32) -> Double? {
        state.withLock { measured -> Double? in
            guard let measured else { return nil }
            var value = 0.0
            guard read(measured, &value) == EBUR128_SUCCESS.rawValue, value.isFinite else { return nil }
            return value
        }
    }

    /// Frames the meter's thread did not get in time (its ring was full), not measured. Thread: any.
    public var framesDropped: UInt64 { tap?.framesDropped ?? finalDropped }
    private var finalDropped: UInt64 = 0

    /// Loudness of the last 0.4 s, LUFS; nil before any audio or for silence. Thread: any.
    public var momentaryLoudness: Double? { reading { ebur128_loudness_momentary($0, $1) } }
    /// Loudness of the last 3 s, LUFS; nil before any audio or for silence. Thread: any.
    public var shortTermLoudness: Double? { reading { ebur128_loudness_shortterm($0, $1) } }
    /// Gated loudness since the start or ``reset()``, LUFS; nil when nothing passed the gates. Thread: any.
    public var integratedLoudness: Double? { reading { ebur128_loudness_global($0, $1) } }
    /// Loudness range (EBU Tech 3342), LU; nil when nothing passed the gates. Thread: any.
    public var loudnessRange: Double? {
        // libebur128 answers 0 LU when nothing passed the gates; nothing was measured then.
        integratedLoudness == nil ? nil : reading { ebur128_loudness_range($0, $1) }
    }

    /// True peak over all channels since the start or ``reset()``, dBTP; nil for silence. Thread: any.
    public var truePeak: Double? {
        state.withLock { measured -> Double? in
            guard let measured else { return nil }
            var peak = 0.0
            for channel in 0..<channelCount {
                var value = 0.0
                guard ebur128_true_peak(measured, UInt32(channel), &value) == EBUR128_SUCCESS.rawValue else { return nil }
                peak = max(peak, value)
            }
            return peak > 0 ? 20 * log10(peak) : nil
        }
    }

    /// Forgets everything measured: the readings start again from the next audio.
    /// Thread: any.
    public func reset() {
        state.withLock { measured in
            guard measured != nil else { return }
            ebur128_destroy(&measured)
            measured = ebur128_init(UInt32(channelCount), UInt(sampleRate.rounded()),
                                    LoudnessMeter.mode)
        }
    }

    /// Stops measuring: removes the tap after its last audio has been added. The readings stay
    /// (the final ones). Calling it again does nothing.
    /// - Throws: ``AudioUnitError/cannotDoInCurrentContext`` on the render thread (nothing changes).
    /// - Thread: control thread; waits for the tap's last block.
    public func stop() throws(AudioUnitError) {
        guard let tap else { return }
        try graph.removeTap(tap)
        finalDropped = tap.framesDropped
        self.tap = nil
    }

    deinit {
        if let tap { try? graph.removeTap(tap) }
        state.withLock { measured in if measured != nil { ebur128_destroy(&measured) } }
    }
}
