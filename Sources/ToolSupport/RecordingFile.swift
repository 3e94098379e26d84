// ToolSupport: a recording file checked before JACK is joined — its type, sample format, rate and channels, and a directory it can be created in.
import AudioGraph
#if canImport(Glibc)
import Glibc
#endif

extension Tool {
    /// The settings for recording to `path`, checked as far as they can be before the JACK
    /// client opens, so that a bad file is refused (status 2) before anything runs: the type
    /// from the extension (.wav, .wave, .flac, .opus, .ogg, .oga, .mp3), a container that holds the sample format at
    /// that rate and channel count, and a folder the file can be created in. What needs the
    /// server's rate (the ratio of a `--rate` to it) is checked when the recorder starts.
    /// - Parameters:
    ///   - path: the file to record to.
    ///   - sampleFormat: as asked for, or nil for the type's default.
    ///   - sampleRate: the file's rate as asked for, or nil for the server's (checked at 48000 Hz until it is known).
    ///   - channels: the file's channels.
    ///   - frameLimit: frames to record, or nil until stopped.
    ///   - quality: for the compressed types, 0…1 (1 best), or nil for the codec's default.
    ///   - bitRate: for Opus, bits per second (all channels), or nil.
    /// - Returns: the settings, with `sampleRate` and `frameLimit` as given and `channels` nil (the element's).
    /// - Thread: the main thread (a refusal exits with ``ExitStatus/usage``).
    public func recordingSettings(path: String, sampleFormat: RecordingSettings.SampleFormat?, sampleRate: Double?,
                                  channels: Int, frameLimit: UInt64? = nil, quality: Double? = nil, bitRate: Int? = nil) -> RecordingSettings {
        var settings: RecordingSettings
        do throws(RecorderError) {
            settings = try RecordingSettings.forPath(path, sampleFormat: sampleFormat)
            settings.sampleRate = sampleRate
            settings.frameLimit = frameLimit
            if quality != nil || bitRate != nil {
                guard settings.fileType.isCompressed else {
                    throw RecorderError.unsupportedSettings("\(settings.fileType.rawValue) is lossless: --quality and --bit-rate are for .opus, .ogg and .mp3")
                }
                guard bitRate == nil || settings.fileType == .opus else {
                    throw RecorderError.unsupportedSettings("--bit-rate is for Opus; \(settings.fileType.rawValue) takes --quality")
                }
            }
            settings.quality = quality
            settings.bitRate = bitRate
            try settings.check(sampleRate: sampleRate ?? 48_000, channels: channels)
        } catch {
            fail("\(error)", status: ExitStatus.usage)
        }
        if let problem = Tool.problem(creating: path) { fail("cannot create \(path): \(problem)", status: ExitStatus.usage) }
        return settings
    }

    /// Why a file could not be created at `path`, without creating it: the folder is missing,
    /// is not a folder or is not writable, or `path` is a folder or a file that cannot be
    /// written. Nil when it looks creatable (an existing file is replaced).
    /// - Thread: any.
    public static func problem(creating path: String) -> String? {
        guard !path.isEmpty, !path.hasSuffix("/") else { return "no file name" }
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { return "it is a directory" }
            if access(path, W_OK) != 0 { return String(cString: strerror(errno)) }
        }
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard stat(folder, &info) == 0 else { return "\(folder): \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(folder) is not a directory" }
        guard access(folder, W_OK | X_OK) == 0 else { return "\(folder): \(String(cString: strerror(errno)))" }
        return nil
    }
}

/// What a tool says when `recorder`'s writes failed (a full disk, a file-size limit): the file,
/// libsndfile's reason, and the frames the file holds — written before the failure, none after
/// it. Nil while writing goes well.
/// Thread: any (reads the recorder's counters).
public func writeFailureMessage(_ recorder: Recorder) -> String? {
    guard let failure = recorder.writeError else { return nil }
    guard case .writeFailed(let path, let reason) = failure else { return "\(failure)" }
    return "writing \(path) failed: \(reason) (libsndfile); the file holds the \(recorder.framesWritten) frames written before the failure"
}

/// Xrun sample times as a tool prints them: each time once, in the order first reported, with
/// how often it was reported when more than once — `146432 (×2), 150528` — since jack2 may
/// report one xrun more than once at the same graph time.
/// Thread: any.
public func xrunTimesText<Times: Sequence<UInt64>>(_ times: Times) -> String {
    var counted: [(time: UInt64, count: Int)] = []
    for time in times {
        if let i = counted.firstIndex(where: { $0.time == time }) { counted[i].count += 1 } else { counted.append((time, 1)) }
    }
    return counted.map { $0.count == 1 ? "\($0.time)" : "\($0.time) (×\($0.count))" }.joined(separator: ", ")
}

/// The lines a tool prints at exit about what a recording lost or changed, none when nothing
/// was: samples clipped by an integer format, each gap the ring's overflow left (a stalled
/// disk) with its graph sample time and file frame, and the JACK xruns of the run with the
/// graph sample times of the first 16 (`xrunTimes`: `JACKDriver.xrunSampleTimes`), each time
/// once with how often it was reported (`146432 (×2)`: jack2 may report one xrun twice). `prefix`
/// starts each line ("graphthru: " or "").
/// Thread: control thread, after ``Recorder/stop()``.
public func recordingReport(_ recorder: Recorder, xruns: UInt64, xrunTimes: [UInt64] = [], prefix: String = "") -> [String] {
    var lines: [String] = []
    if recorder.clippedSampleCount > 0 {
        lines.append("\(prefix)clipped: \(recorder.clippedSampleCount) sample(s) beyond ±1.0 written as full scale (\(recorder.settings.sampleFormat.rawValue))")
    }
    let gaps = recorder.gaps
    if !gaps.isEmpty {
        let more = recorder.gapCount > gaps.count ? " (the first \(gaps.count) of \(recorder.gapCount))" : ""
        lines.append("\(prefix)dropped: \(recorder.framesDropped) frame(s) the writer fell behind on (disk too slow), in \(recorder.gapCount) gap(s)\(more):")
        for gap in gaps { lines.append("\(prefix)  \(gap)") }
    }
    if xruns > 0 {
        let shown = xrunTimesText(xrunTimes.prefix(16))
        let more = xruns > UInt64(min(xrunTimes.count, 16)) ? ", …" : ""
        lines.append("\(prefix)xruns: \(xruns) reported by JACK during the recording, at sample time(s) \(shown)\(more)")
    }
    return lines
}
