// Observers: AudioRecorder — the AVAudioRecorder analogue on a graph: prepare, record, record for a duration, pause and resume, stop, delete, and metering.
import Synchronization
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
    /// Called once when a recording ends: after ``stop()`` (true), by itself after
    /// ``record(forDuration:)``'s duration (true, on the writer thread), or as soon as a write
    /// fails (false, on the writer thread; ``lastError`` says why) — AVAudioRecorder's
    /// `audioRecorderDidFinishRecording(_:successfully:)` and
    /// `audioRecorderEncodeErrorDidOccur(_:error:)`. Read when the recording ends, so it may be
    /// set at any time. On the writer thread it must not block or call ``stop()``.
    public var onFinish: (@Sendable (_ successfully: Bool) -> Void)? {
        get { finishing.handler.withLock { $0 } }
        set { finishing.handler.withLock { $0 = newValue } }
    }
    /// The error of the last call that returned false (cleared by the next call that succeeds),
    /// or of a write that failed during the recording.
    public var lastError: RecorderError? { callError ?? recorder?.writeError }
    /// When the file's rate is not the one asked for (Opus and MP3 take a few rates), the
    /// sentence that says what is recorded instead; nil otherwise or before the file is made.
    public var rateNote: String? { recorder?.rateNote }

    /// ``onFinish`` and whether it was called for the current recording: shared with the
    /// writer thread (not the recorder itself).
    final class Finishing: Sendable {
        let handler = ControlLock<(@Sendable (Bool) -> Void)?>(nil)
        let said = Atomic<Bool>(false)
        /// Calls the handler, once per recording.
        func finish(_ successfully: Bool) {
            guard !said.exchange(true, ordering: .acquiringAndReleasing) else { return }
            handler.withLock { $0 }?(successfully)
        }
    }

    private var recorder: Recorder?
    private let metering: PowerMetering
    private let finishing = Finishing()
    private var callError: RecorderError?
    private var recording = false
    /// A duration's end (the element's sample time) while recording for a duration.
    private var endTime: Double?
    /// A duration's frames not yet recorded when ``pause()`` came: ``record()`` records them.
    private var remainingFrames: Double?
    /// The element's rate, Hz: sample times count its frames.
    private let sourceRate: Double

    /// A recorder of `node`'s output `element` into `path`; nothing is created until
    /// ``prepareToRecord()`` or ``record()``.
    /// - Throws: ``RecorderError/unsupportedSettings(_:)`` (the extension, when `settings` is nil;
    ///   an extension of another type than `settings` says; or the settings at the element's
    ///   rate and channels), ``RecorderError/audioUnit(_:)`` (a node or element that cannot be
    ///   recorded).
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
        if recorder != nil { callError = nil; return true }
        do throws(RecorderError) {
            let made = try Recorder(graph: graph, node: node, element: element, path: path, settings: settings, gated: true)
            let finishing = finishing
            made.whenAWriteFails { finishing.finish(false) }
            recorder = made
            settings = made.settings
            finishing.said.store(false, ordering: .releasing)
            callError = nil
            return true
        } catch {
            callError = error
            return false
        }
    }

    /// Starts recording with the graph's next slice, or resumes after ``pause()`` (a duration
    /// paused records what is left of it). True when recording.
    @discardableResult
    public func record() -> Bool {
        if recording, let endTime, graph.sampleTime >= endTime {
            callError = .unsupportedSettings("this recording finished when its duration ended; stop() it, and record() starts a new one")
            return false
        }
        guard !recording else { callError = nil; return true }
        // After stop() or a finish, a new recording replaces the file, as AVAudioRecorder's does.
        if recorder?.isRecording == false || recorder?.writeError != nil { recorder = nil; remainingFrames = nil }
        guard prepareToRecord(), let recorder else { return false }
        let start = graph.sampleTime
        if let remaining = remainingFrames {
            let end = start + remaining
            recorder.finish(at: end) { [finishing] in finishing.finish(true) }
            recorder.openSpan(at: start, until: end)
            endTime = end
            remainingFrames = nil
        } else {
            recorder.openSpan(at: start)
            endTime = nil
        }
        recording = true
        return true
    }

    /// Records for `duration` seconds of the graph's time from its next slice (paused time not
    /// counted), then stops by itself (the file complete and closed) and calls ``onFinish``.
    /// True when recording; false (``lastError``) for a duration that is not above 0 and
    /// finite, or while a recording is under way.
    @discardableResult
    public func record(forDuration duration: Double) -> Bool {
        guard duration.isFinite, duration > 0 else { callError = .unsupportedSettings("a duration of \(duration) s: above 0"); return false }
        guard !recording, remainingFrames == nil else {
            callError = .unsupportedSettings("a recording is under way or paused: stop() it first")
            return false
        }
        if recorder?.isRecording == false || recorder?.writeError != nil { recorder = nil }
        guard prepareToRecord(), let recorder else { return false }
        let start = graph.sampleTime
        let end = start + (duration * sourceRate).rounded()
        recorder.finish(at: end) { [finishing] in finishing.finish(true) }
        recorder.openSpan(at: start, until: end)
        recording = true
        endTime = end
        return true
    }

    /// Pauses: the graph's next slice is not recorded; ``record()`` resumes, and the file goes
    /// on with no gap (a duration goes on counting from where it paused).
    public func pause() {
        guard recording, let recorder else { return }
        let now = graph.sampleTime
        if let endTime {
            guard now < endTime else { return }  // the duration has ended: nothing to pause
            remainingFrames = endTime - now
            recorder.finish(at: nil, nil)
        }
        recorder.closeSpan(at: now)
        recording = false
        endTime = nil
    }

    /// Stops and closes the file (everything before the graph's next slice is in it). Calls
    /// ``onFinish`` with true, or false when a write failed, unless it was called already
    /// (a duration's end, a write failure).
    public func stop() {
        guard let recorder else { return }
        recorder.finish(at: nil, nil)
        recorder.closeSpan(at: graph.sampleTime)
        recording = false
        endTime = nil
        remainingFrames = nil
        var success = true
        do throws(RecorderError) { try recorder.stop() } catch { callError = error; success = false }
        finishing.finish(success)
    }

    /// Whether it is recording now (false after ``pause()``, ``stop()``, a duration's end, or a
    /// write failure).
    public var isRecording: Bool {
        recording && (endTime.map { graph.sampleTime < $0 } ?? true) && recorder?.isRecording == true && recorder?.writeError == nil
    }

    /// Seconds in the file so far (the paused time not counted); after ``stop()``, the file's
    /// length (AVAudioRecorder answers 0 then). Thread: any.
    public var currentTime: Double {
        guard let recorder, let rate = recorder.settings.sampleRate else { return 0 }
        return Double(recorder.framesWritten) / rate
    }

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
