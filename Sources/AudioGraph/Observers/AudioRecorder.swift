// Observers: AudioRecorder — the AVAudioRecorder analogue on a graph: prepare, record, record for a duration, pause and resume, stop, delete, and metering.
#if canImport(Glibc)
import Glibc
#endif

/// Records a node's output (by default a graph's microphone: the ``IOUnit``'s element 1) the way
/// `AVAudioRecorder` does, on a ``Recorder`` and a ``LevelMeter``.
///
/// | AVAudioRecorder | here |
/// |---|---|
/// | `init(url:settings:)` | ``init(path:settings:graph:node:element:)`` (settings: ``RecordingSettings``; nil from the extension) |
/// | `prepareToRecord()` | ``prepareToRecord()``: creates the file |
/// | `record()`, `record(forDuration:)` | ``record()``, ``record(forDuration:)`` |
/// | `pause()` / `record()` again | ``pause()`` / ``record()``: the file goes on where it paused, without the paused time |
/// | `stop()`, `isRecording`, `currentTime` | ``stop()``, ``isRecording``, ``currentTime`` |
/// | `deleteRecording()` | ``deleteRecording()`` |
/// | `isMeteringEnabled`, `updateMeters()`, `averagePower(forChannel:)`, `peakPower(forChannel:)` | the same names (dBFS, −160 for silence; see ``LevelMeter``) |
/// | `audioRecorderDidFinishRecording(_:successfully:)` | ``onFinish`` |
/// | `audioRecorderEncodeErrorDidOccur(_:error:)` | ``lastError`` and `onFinish(false)` |
///
/// Timing is sample-accurate in the graph's time: ``record()`` starts with the slice the graph
/// renders next (``AudioGraph/sampleTime``), ``pause()`` and ``stop()`` end before it, and a
/// duration is exact in frames. The graph must be running for anything to be recorded.
/// Thread: control thread for every call; ``onFinish`` after a duration runs on the recorder's
/// writer thread (it must not call ``stop()``), after ``stop()`` on the caller's.
/// SAFETY (`@unchecked Sendable`): state is control-thread only; the writer thread calls `onFinish` and reads nothing else here.
public final class AudioRecorder: @unchecked Sendable {
    /// The file recorded to.
    public let path: String
    /// The settings (the file's rate and channels filled in once prepared).
    public private(set) var settings: RecordingSettings
    /// The graph holding the node recorded.
    public let graph: AudioGraph
    /// The node whose output is recorded.
    public let node: AUNode
    /// The output element recorded (the ``IOUnit``'s 1: the microphone).
    public let element: AudioUnitElement
    /// Called when a recording ends: after ``stop()`` (true unless a write failed), or by itself
    /// after ``record(forDuration:)``'s duration (on the writer thread).
    public var onFinish: (@Sendable (_ successfully: Bool) -> Void)?
    /// The error of the last call that returned false, or of a write that failed.
    public private(set) var lastError: RecorderError?

    private var recorder: Recorder?
    private let metering: PowerMetering
    private var recording = false
    private var endTime: Double?
    /// The element's rate, Hz: sample times count its frames.
    private let sourceRate: Double

    /// A recorder of `node`'s output `element` into `path`; nothing is created until
    /// ``prepareToRecord()`` or ``record()``.
    /// - Throws: ``RecorderError/unsupportedSettings(_:)`` (the extension, when `settings` is nil,
    ///   or the settings at the element's rate and channels), ``RecorderError/audioUnit(_:)`` (a
    ///   node or element that cannot be recorded).
    public init(path: String, settings: RecordingSettings? = nil, graph: AudioGraph, node: AUNode,
                element: AudioUnitElement = IOUnit.inputElement) throws(RecorderError) {
        let (chosen, source) = try Recorder.resolve(path: path, settings: settings, graph: graph, node: node, element: element)
        try chosen.check(sampleRate: chosen.sampleRate ?? source.sampleRate, channels: chosen.channels ?? Int(source.channelsPerFrame))
        self.path = path
        self.settings = chosen
        self.graph = graph
        self.node = node
        self.element = element
        sourceRate = source.sampleRate
        metering = PowerMetering(graph: graph, node: node, element: element)
    }

    /// Creates the file (replacing one there), ready to record. True when it is ready.
    @discardableResult
    public func prepareToRecord() -> Bool {
        if recorder != nil { return true }
        do throws(RecorderError) {
            let made = try Recorder(graph: graph, node: node, element: element, path: path, settings: settings, gated: true)
            recorder = made
            settings = made.settings
            return true
        } catch {
            lastError = error
            return false
        }
    }

    /// Starts or resumes recording with the graph's next slice. True when recording.
    @discardableResult
    public func record() -> Bool {
        if let endTime, graph.sampleTime >= endTime {
            lastError = .unsupportedSettings("this recording finished when its duration ended; stop() it, and record() starts a new one")
            return false
        }
        guard !recording else { return true }
        // After stop(), a new recording replaces the file, as AVAudioRecorder's does.
        if recorder?.isRecording == false { recorder = nil }
        guard prepareToRecord(), let recorder else { return false }
        recorder.openSpan(at: graph.sampleTime)
        recording = true
        endTime = nil
        return true
    }

    /// Records for `duration` seconds of the graph's time from its next slice, then stops by
    /// itself (the file complete and closed) and calls ``onFinish``. True when recording.
    @discardableResult
    public func record(forDuration duration: Double) -> Bool {
        guard duration.isFinite, duration > 0 else { lastError = .unsupportedSettings("a duration of \(duration) s: above 0"); return false }
        guard endTime == nil, !recording else { return false }
        if recorder?.isRecording == false { recorder = nil }
        guard prepareToRecord(), let recorder else { return false }
        let start = graph.sampleTime
        let end = start + (duration * sourceRate).rounded()
        let callback = onFinish
        recorder.finishWhenSpanEnds { callback?(true) }
        recorder.openSpan(at: start, until: end)
        recording = true
        endTime = end
        return true
    }

    /// Pauses: the graph's next slice is not recorded; ``record()`` resumes, and the file goes
    /// on with no gap.
    public func pause() {
        guard recording, let recorder else { return }
        recorder.closeSpan(at: graph.sampleTime)
        recording = false
    }

    /// Stops and closes the file (everything before the graph's next slice is in it). Calls
    /// ``onFinish`` with true, or false (and ``lastError``) when a write failed.
    public func stop() {
        guard let recorder else { return }
        // Stopped before a duration's end: this call finishes it, not the writer.
        recorder.finishWhenSpanEnds(nil)
        recorder.closeSpan(at: graph.sampleTime)
        recording = false
        var success = true
        do throws(RecorderError) { try recorder.stop() } catch { lastError = error; success = false }
        if endTime == nil || graph.sampleTime < endTime! { onFinish?(success) }
        endTime = nil
    }

    /// Whether it is recording now (false after ``pause()``, ``stop()``, or a duration's end).
    public var isRecording: Bool { recording && (endTime.map { graph.sampleTime < $0 } ?? true) && recorder?.isRecording == true }

    /// Seconds in the file so far (the paused time not counted); after ``stop()``, the file's
    /// length (AVAudioRecorder answers 0 then). Thread: any.
    public var currentTime: Double {
        guard let recorder, let rate = recorder.settings.sampleRate else { return 0 }
        return Double(recorder.framesWritten) / rate
    }

    /// Samples (frames × channels) beyond ±1.0 clipped to full scale because the file stores
    /// integers (16- or 24-bit WAV, FLAC); 0 for Float32 WAV, Opus, Vorbis and MP3, which keep
    /// them. See ``Recorder/clippedSampleCount``. 0 before recording. Thread: any.
    public var clippedSampleCount: UInt64 { recorder?.clippedSampleCount ?? 0 }

    /// Frames lost because the writer fell behind by more than
    /// ``RecordingSettings/bufferDuration`` (a stalled disk), at the graph's rate; where each
    /// gap is: ``gaps``. See ``Recorder/framesDropped``. Thread: any.
    public var framesDropped: UInt64 { recorder?.framesDropped ?? 0 }

    /// The gaps dropped frames left, with their graph sample times and file frames (the first
    /// ``RecordingGap/maximumKept``). See ``Recorder/gaps``. Thread: any; allocates.
    public var gaps: [RecordingGap] { recorder?.gaps ?? [] }

    /// Stops if need be and removes the file. True when it is gone.
    @discardableResult
    public func deleteRecording() -> Bool {
        stop()
        recorder = nil
        return unlink(path) == 0 || errno == ENOENT
    }

    /// Whether ``updateMeters()`` reads levels (a ``LevelMeter`` on the element while true).
    public var isMeteringEnabled: Bool {
        get { metering.isEnabled }
        set { metering.isEnabled = newValue }
    }

    /// Takes the meters' current readings, for the next ``averagePower(forChannel:)`` and
    /// ``peakPower(forChannel:)`` (AVAudioRecorder's order: update, then read).
    public func updateMeters() { metering.update() }

    /// The last ``updateMeters()``'s average power of `channel`, dBFS (τ = 0.3 s; −3.01 for a
    /// full-scale sine); −160 when metering is off, before an update, or for a channel it lacks.
    public func averagePower(forChannel channel: Int) -> Float { metering.averagePower(channel) }

    /// The last ``updateMeters()``'s peak power of `channel`, dBFS (held 1.5 s; 0 for a full-scale
    /// sine); −160 when metering is off, before an update, or for a channel it lacks.
    public func peakPower(forChannel channel: Int) -> Float { metering.peakPower(channel) }

    deinit { metering.remove() }
}
