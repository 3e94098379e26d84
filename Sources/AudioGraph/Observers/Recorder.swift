// Observers: Recorder — a tap's thread writing WAV, FLAC, Ogg Opus, Ogg Vorbis or MP3 through libsndfile.
import CSndFile
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What a ``Recorder`` writes: container, sample format, rate and channels.
public struct RecordingSettings: Sendable, Equatable {
    /// The container.
    public enum FileType: String, Sendable, CaseIterable {
        /// RIFF WAVE, written as libsndfile's RF64 with automatic downgrade (`SF_FORMAT_RF64`,
        /// `SFC_RF64_AUTO_DOWNGRADE`): a plain RIFF WAVE file (WAVE_FORMAT_EXTENSIBLE) while it
        /// is under 4 GiB, and an RF64 file (EBU Tech 3306, 64-bit sizes in a `ds64` chunk) from
        /// the write that takes it past 4 GiB — so a long multichannel recording is never cut
        /// or wrapped at 4 GiB. Readers without RF64 support read only files under 4 GiB.
        case wav
        /// FLAC, lossless (`SF_FORMAT_FLAC`); integer samples only.
        case flac
        /// Ogg Opus, lossy (`SF_FORMAT_OGG | SF_FORMAT_OPUS`, libopus through libsndfile): the
        /// codec for speech and music at low bit rates, and the equivalent of AVAudioRecorder's
        /// AAC, which libsndfile does not write. Rates 8000, 12000, 16000, 24000 or 48000 Hz;
        /// another is recorded at the next of those above it (48000 past it), and
        /// ``Recorder/rateNote`` says so.
        case opus
        /// Ogg Vorbis, lossy (`SF_FORMAT_OGG | SF_FORMAT_VORBIS`); any rate.
        case vorbis
        /// MP3 (MPEG-1/2 Layer III, `SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III`, LAME through
        /// libsndfile); the MPEG rates 8000…48000 Hz, another recorded at the next above (48000
        /// past it), as for Opus.
        case mp3

        /// Whether the codec is lossy: no sample format, a ``RecordingSettings/quality`` instead.
        public var isCompressed: Bool { self == .opus || self == .vorbis || self == .mp3 }
        /// The rates Opus encodes at, Hz.
        public static let opusRates: [Double] = [8_000, 12_000, 16_000, 24_000, 48_000]
        /// The rates MP3 (MPEG-1, 2 and 2.5 Layer III) encodes at, Hz.
        public static let mpegRates: [Double] = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000]

        /// The rates the codec takes, or nil for any.
        var rates: [Double]? { self == .opus ? FileType.opusRates : self == .mp3 ? FileType.mpegRates : nil }
    }

    /// How samples are stored.
    public enum SampleFormat: String, Sendable, CaseIterable {
        /// 16-bit signed integer (`SF_FORMAT_PCM_16`). Samples beyond ±1.0 are clipped to the
        /// format's range and counted (``Recorder/clippedSampleCount``).
        case int16
        /// 24-bit signed integer (`SF_FORMAT_PCM_24`). Samples beyond ±1.0 are clipped to the
        /// format's range and counted (``Recorder/clippedSampleCount``).
        case int24
        /// 32-bit IEEE float (`SF_FORMAT_FLOAT`), WAV only: every Float32 sample bit for bit,
        /// including values beyond ±1.0, which are kept as they are (not clipped, not counted).
        case float32
    }

    /// The container.
    public var fileType: FileType
    /// The sample format.
    public var sampleFormat: SampleFormat
    /// Frames per second in the file, Hz; nil records at the graph's rate.
    public var sampleRate: Double?
    /// Channels in the file, 1…64; nil records the element's channel count.
    public var channels: Int?
    /// The most frames the file holds, at the file's rate (1 or more); nil records until
    /// ``Recorder/stop()``. Once the file holds this many, later frames are neither written nor
    /// counted as dropped, and ``Recorder/isComplete`` is true: a recording of exactly this length.
    public var frameLimit: UInt64?
    /// For a compressed file: the quality, 0 (smallest file) … 1 (best), as libsndfile's
    /// compression level 1 − quality (`SFC_SET_COMPRESSION_LEVEL`); for Opus that is a target
    /// of 6 + 250 × quality kbit/s per channel. Nil: the codec's default. Ignored for WAV and FLAC.
    public var quality: Double?

    /// For Opus: the target bit rate in bits per second, all channels together (what
    /// AVEncoderBitRateKey gives), 6000…256000 per channel; it takes the place of ``quality``.
    /// Nil: ``quality``'s. Ignored for the other types.
    public var bitRate: Int?

    /// The tap ring's capacity, in seconds of the recorded element's audio, 0.1…60 (default 2):
    /// how long the writer thread may stall (a slow or frozen disk) before frames are dropped.
    /// The render thread never waits for the disk: past this, whole slices are dropped,
    /// counted (``Recorder/framesDropped``) and located (``Recorder/gaps``), and recording
    /// continues as soon as the writer catches up. The ring is allocated (and locked in
    /// memory where allowed) when recording starts: element channels × rate × this × 4 bytes.
    public var bufferDuration: Double = 2

    /// The bounds of ``bufferDuration``, seconds.
    public static let bufferDurationRange: ClosedRange<Double> = 0.1...60

    /// libsndfile's compression level for these settings at `channels` channels, or nil for
    /// the codec's default.
    func compressionLevel(channels: Int) -> Double? {
        guard fileType.isCompressed else { return nil }
        if fileType == .opus, let bitRate { return 1 - (Double(bitRate) / Double(channels) - 6_000) / 250_000 }
        return quality.map { 1 - $0 }
    }

    /// - Parameters:
    ///   - fileType: WAV, FLAC, Opus, Vorbis or MP3.
    ///   - sampleFormat: default 32-bit float (WAV) — pass `.int16`/`.int24` for FLAC; the
    ///     compressed types take only the default.
    ///   - sampleRate: Hz, or nil for the graph's rate.
    ///   - channels: 1…64, or nil for the element's channel count.
    ///   - frameLimit: frames to record at most (1…), or nil for no limit.
    ///   - quality: for Opus, Vorbis and MP3: 0…1 (1 best), or nil for the codec's default.
    ///   - bufferDuration: the tap ring, seconds, 0.1…60 (checked when recording starts).
    public init(fileType: FileType = .wav, sampleFormat: SampleFormat = .float32, sampleRate: Double? = nil, channels: Int? = nil,
                frameLimit: UInt64? = nil, quality: Double? = nil, bufferDuration: Double = 2) {
        self.fileType = fileType
        self.sampleFormat = sampleFormat
        self.sampleRate = sampleRate
        self.channels = channels
        self.frameLimit = frameLimit
        self.quality = quality
        self.bufferDuration = bufferDuration
    }

    /// The rate the file is written at for a requested `rate`: the same, except for Opus or MP3
    /// at a rate the codec does not encode (its next rate above, 48000 past them all); and the
    /// sentence that says so, nil when nothing changed. The sentence names the rate asked, not
    /// where the audio comes from (the element's rate, which a tool can add).
    public func fileRate(for rate: Double) -> (rate: Double, note: String?) {
        guard let rates = fileType.rates, !rates.contains(rate) else { return (rate, nil) }
        let chosen = rates.first { $0 >= rate } ?? 48_000
        let name = fileType == .opus ? "Opus" : "MP3"
        let list = rates.map { String(Int($0)) }
        return (chosen, "\(name) takes \(list.dropLast().joined(separator: ", ")) or \(list.last!) Hz: recording at \(Int(chosen)) Hz (asked \(Int(rate)) Hz)")
    }

    /// Settings for a path: the container from its extension (`.wav`, `.wave`, `.flac`,
    /// `.opus`, `.ogg` or `.oga` (Vorbis), `.mp3`, any case), the sample format as given or else
    /// 32-bit float for WAV and 24-bit for FLAC (the compressed types take none).
    /// - Throws: ``RecorderError/unsupportedSettings(_:)`` for another extension, or a sample
    ///   format given for a compressed type.
    public static func forPath(_ path: String, sampleFormat: SampleFormat? = nil) throws(RecorderError) -> RecordingSettings {
        let ext = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        let type: FileType
        switch ext {
        case "wav", "wave": return RecordingSettings(fileType: .wav, sampleFormat: sampleFormat ?? .float32)
        case "flac": return RecordingSettings(fileType: .flac, sampleFormat: sampleFormat ?? .int24)
        case "opus": type = .opus
        case "ogg", "oga": type = .vorbis
        case "mp3": type = .mp3
        default: throw .unsupportedSettings("cannot tell the file type from \"\(path)\": use .wav, .flac, .opus, .ogg or .mp3 (AAC/.m4a is not available: libsndfile has no AAC encoder; Opus is its equivalent)")
        }
        if let sampleFormat, sampleFormat != .float32 {
            throw .unsupportedSettings("\(type.rawValue) is compressed: it takes a quality, not a sample format (\(sampleFormat.rawValue))")
        }
        return RecordingSettings(fileType: type)
    }

    /// Checks that a file of these settings can be written at `sampleRate` with `channels`
    /// channels, without creating anything: a tool can refuse bad options before it starts.
    /// ``Recorder/init(graph:node:element:path:settings:)`` runs the same check (with the
    /// node's rate and channels where these settings leave them nil), and the rate ratio.
    /// - Parameters:
    ///   - sampleRate: the file's rate, Hz (``sampleRate``, or the graph's when that is nil).
    ///   - channels: the file's channels (``channels``, or the element's when that is nil).
    /// - Throws: ``RecorderError/unsupportedSettings(_:)``: a rate that is not a whole number of
    ///   Hz within 1…768000, channels outside 1…64, a frame limit of 0, a ``bufferDuration``
    ///   outside 0.1…60 s (or not finite), or a container that cannot hold the sample format
    ///   (FLAC and float32).
    /// - Thread: any.
    public func check(sampleRate: Double, channels: Int) throws(RecorderError) {
        _ = try checked(sampleRate: sampleRate, channels: channels)
    }

    /// ``check(sampleRate:channels:)``, returning libsndfile's description of the file.
    func checked(sampleRate rate: Double, channels: Int) throws(RecorderError) -> SF_INFO {
        guard rate.isFinite, rate >= 1, rate <= StreamFormat.maximumSampleRate, rate == rate.rounded() else {
            throw .unsupportedSettings("sample rate \(rate) Hz: a whole number of Hz, 1…768000")
        }
        guard channels >= 1, channels <= Int(StreamFormat.maximumChannelCount) else {
            throw .unsupportedSettings("\(channels) channels: 1…64")
        }
        guard frameLimit != 0 else {
            throw .unsupportedSettings("a frame limit of 0: 1 frame or more, or nil to record until stop()")
        }
        guard bufferDuration.isFinite, RecordingSettings.bufferDurationRange.contains(bufferDuration) else {
            throw .unsupportedSettings("a buffer duration of \(bufferDuration) s: 0.1…60 s")
        }
        if let quality, !(quality.isFinite && quality >= 0 && quality <= 1) {
            throw .unsupportedSettings("quality \(quality): 0 (smallest) … 1 (best)")
        }
        if fileType == .opus, let bitRate, !(6_000...256_000).contains(bitRate / channels) {
            throw .unsupportedSettings("Opus bit rate \(bitRate) bit/s for \(channels) channel(s): 6000…256000 per channel")
        }
        if fileType.isCompressed && sampleFormat != .float32 {
            throw .unsupportedSettings("\(fileType.rawValue) is compressed: it takes a quality, not a sample format (\(sampleFormat.rawValue))")
        }
        let rate = fileRate(for: rate).rate
        var info = SF_INFO()
        info.samplerate = Int32(rate)
        info.channels = Int32(channels)
        info.format = sndfileFormat
        guard sf_format_check(&info) == Int32(SF_TRUE) else {
            // Refused at 48 kHz mono too: the container never holds the sample format, so the
            // rate and channels are not the reason and are not named.
            var plain = SF_INFO()
            plain.samplerate = 48_000
            plain.channels = 1
            plain.format = sndfileFormat
            if sf_format_check(&plain) != Int32(SF_TRUE) {
                throw .unsupportedSettings("\(fileType.rawValue) cannot hold \(sampleFormat.rawValue) samples, at any rate")
            }
            throw .unsupportedSettings("\(fileType.rawValue) cannot hold \(sampleFormat.rawValue) samples at \(Int(rate)) Hz, \(channels) ch")
        }
        return info
    }

    /// The libsndfile format code.
    var sndfileFormat: Int32 {
        switch fileType {
        case .opus: return Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS)
        case .vorbis: return Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
        case .mp3: return Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)
        case .wav, .flac: break
        }
        // WAV as RF64 with automatic downgrade (set at open): RIFF WAVE under 4 GiB, RF64 past it.
        let container = fileType == .wav ? SF_FORMAT_RF64 : SF_FORMAT_FLAC
        let subtype: Int
        switch sampleFormat {
        case .int16: subtype = SF_FORMAT_PCM_16
        case .int24: subtype = SF_FORMAT_PCM_24
        case .float32: subtype = SF_FORMAT_FLOAT
        }
        return Int32(container | subtype)
    }
}

/// Why a recording could not start or did not complete.
public enum RecorderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The settings cannot be written (for example float samples in FLAC, a rate or channel
    /// count out of bounds, or a conversion not available). Nothing was created.
    case unsupportedSettings(String)
    /// The file could not be created (a missing directory, no permission, disk full at the
    /// header): libsndfile's reason. Nothing was installed in the graph.
    case cannotCreate(path: String, reason: String)
    /// Writing failed part-way (typically the disk filled up): libsndfile's reason. Frames
    /// before the failure are in the file, which is closed with a valid header.
    case writeFailed(path: String, reason: String)
    /// The node or element cannot be tapped.
    case audioUnit(AudioUnitError)

    /// What went wrong and what to do, in one sentence.
    public var description: String {
        switch self {
        case .unsupportedSettings(let why): return "unsupported recording settings: \(why)"
        case .cannotCreate(let path, let reason): return "cannot create \(path): \(reason)"
        case .writeFailed(let path, let reason): return "writing \(path) failed: \(reason) (libsndfile); the file is closed and holds the frames written before the failure"
        case .audioUnit(let error): return "cannot record this element: \(error)"
        }
    }
}

/// Records a node's output element to a WAV, FLAC, Ogg Opus, Ogg Vorbis or MP3 file through libsndfile.
///
/// A tap (see ``AudioTap``) takes each slice off the render thread; the tap's thread — the
/// writer thread — converts it to the file's rate and channel count with an ``AudioConverter``
/// (libsamplerate; N → 1 averages, 1 → N copies) and writes blocks of 4096 frames. The render thread never touches
/// the file. Every write updates the file's header (libsndfile's `SFC_SET_UPDATE_HEADER_AUTO`),
/// so a process killed mid-recording leaves a valid WAV file holding every block written so
/// far; ``stop()`` writes the rest and closes the file.
///
/// Integer formats (16- and 24-bit WAV and FLAC): a sample `x` becomes `round(x × 32768)`
/// (16-bit) or `round(x × 8388608)` (24-bit), clipped to the format's range — the inverse of
/// libsndfile's integer-to-float read scaling, so integer audio that went through the graph
/// unchanged is recorded bit for bit. Samples beyond ±1.0 are clipped and counted in
/// ``clippedSampleCount``. Float32 WAV keeps them as they are; Opus, Vorbis and MP3 encode
/// floats and keep them too (a decoder reads them back beyond ±1), so neither counts any.
///
/// Frames dropped by the tap (the writer fell behind by more than the ring,
/// ``RecordingSettings/bufferDuration``, 2 s by default — a stalled disk) are not in the file;
/// ``framesDropped`` counts them and ``gaps`` says where each gap is. The render thread never
/// waits for the writer.
/// Thread: start and stop from a control thread; counters from any thread.
/// SAFETY (`@unchecked Sendable`): counters are atomics; the writer runs on the tap's thread only; start and stop are control-thread calls.
public final class Recorder: @unchecked Sendable {
    /// The file being written.
    public let path: String
    /// The settings, with rate and channels filled in (the file's rate: for Opus, the Opus rate
    /// recorded at).
    public let settings: RecordingSettings
    /// When the file's rate is not the one asked for (Opus and MP3 take a few), the sentence that
    /// says what was recorded instead; nil otherwise.
    public let rateNote: String?
    /// The node recorded.
    public let node: AUNode
    /// The output element recorded.
    public let element: AudioUnitElement

    private let graph: AudioGraph
    private let writer: RecordingWriter
    private var tap: AudioTap?

    /// Creates the file and starts recording at the next slice the node renders.
    /// - Parameters:
    ///   - graph: the graph holding `node`.
    ///   - node: the node whose output is recorded.
    ///   - element: output element: 0, or for the ``IOUnit`` 1 (device input) or 0 (device output).
    ///   - path: the file to create (replaced if it exists).
    ///   - settings: container, sample format, rate and channels; nil: ``RecordingSettings/forPath(_:sampleFormat:)``.
    /// - Throws: ``RecorderError/unsupportedSettings(_:)``, ``RecorderError/cannotCreate(path:reason:)``,
    ///   ``RecorderError/audioUnit(_:)`` (`nodeNotFound`, `invalidElement`, `cannotDoInCurrentContext`).
    ///   On a throw no file is left behind and the graph is unchanged.
    /// - Thread: control thread; allocates; starts the writer thread.
    public convenience init(graph: AudioGraph, node: AUNode, element: AudioUnitElement = 0, path: String,
                            settings: RecordingSettings? = nil) throws(RecorderError) {
        try self.init(graph: graph, node: node, element: element, path: path, settings: settings, gated: false)
    }

    /// As the public init; `gated`: nothing is written until ``openSpan(at:)`` (``AudioRecorder``).
    init(graph: AudioGraph, node: AUNode, element: AudioUnitElement, path: String,
         settings: RecordingSettings?, gated: Bool) throws(RecorderError) {
        var (chosen, source) = try Recorder.resolve(path: path, settings: settings, graph: graph, node: node, element: element)
        let (rate, note) = chosen.fileRate(for: chosen.sampleRate ?? source.sampleRate)
        let channels = chosen.channels ?? Int(source.channelsPerFrame)
        var info = try chosen.checked(sampleRate: rate, channels: channels)
        let ratio = rate / source.sampleRate
        guard ratio >= 1.0 / 256, ratio <= 256 else {
            throw .unsupportedSettings("\(Int(rate)) Hz from an element at \(Int(source.sampleRate)) Hz: the rate ratio must be within 1/256…256")
        }
        chosen.sampleRate = rate
        chosen.channels = channels
        let file = try Recorder.createFile(path: path, info: &info, settings: chosen)
        rateNote = note
        self.path = path
        self.settings = chosen
        self.node = node
        self.element = element
        self.graph = graph
        writer = RecordingWriter(file: file, path: path, channels: channels, sampleFormat: chosen.sampleFormat,
                                 frameLimit: chosen.frameLimit ?? .max, gated: gated, ratio: source.sampleRate / rate)
        let format = try! StreamFormat.float32(sampleRate: rate, channels: UInt32(channels), interleaved: true)
        let writer = self.writer
        do throws(AudioUnitError) {
            tap = try graph.installTap(on: node, element: element, blockFrames: 4096, format: format,
                                       bufferDuration: chosen.bufferDuration) { block in
                writer.write(block)
            }
        } catch {
            writer.close()
            unlink(path)
            throw .audioUnit(error)
        }
    }

    /// Creates `path` for writing as `settings` say (`info` from ``RecordingSettings/checked(sampleRate:channels:)``):
    /// WAV as RF64 with automatic downgrade, the codec's quality, the header written now and
    /// rewritten on every write. On failure nothing is left behind (a file it created is removed).
    /// - Throws: ``RecorderError/cannotCreate(path:reason:)``. Thread: control thread.
    static func createFile(path: String, info: inout SF_INFO, settings: RecordingSettings) throws(RecorderError) -> OpaquePointer {
        var before = stat()
        let existed = stat(path, &before) == 0
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw .cannotCreate(path: path, reason: String(cString: sf_strerror(nil)))
        }
        // WAV: a RIFF header (with room for RF64's ds64 chunk) until the file passes 4 GiB,
        // then RF64; set before any audio is written (libsndfile ignores it after).
        if settings.fileType == .wav { sf_command(file, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE)) }
        // A codec's quality is set before anything is written (Vorbis and Opus write their
        // headers with it).
        if var level = settings.compressionLevel(channels: Int(info.channels)) {
            sf_command(file, Int32(SFC_SET_COMPRESSION_LEVEL), &level, Int32(MemoryLayout<Double>.size))
        }
        // Write the header now: a FLAC encoder otherwise starts (and finds a full disk or a
        // device it cannot write) only at the first block, long after this call returned.
        // (Ogg and MP3 headers are written with the first audio.)
        if !settings.fileType.isCompressed { sf_command(file, Int32(SFC_UPDATE_HEADER_NOW), nil, 0) }
        if sf_error(file) != 0 {
            let reason = String(cString: sf_strerror(file))
            sf_close(file)
            var after = stat()
            if !existed, stat(path, &after) == 0, (after.st_mode & S_IFMT) == S_IFREG { unlink(path) }
            throw .cannotCreate(path: path, reason: reason)
        }
        // Every write rewrites the header, so the file is valid at any moment. (Ogg and MP3
        // need none: their pages and frames are complete as each is written.)
        if !settings.fileType.isCompressed { sf_command(file, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE)) }
        return file
    }

    /// The settings to record with (`settings`, else from `path`'s extension) and the format
    /// of the element recorded.
    /// - Throws: ``RecorderError/unsupportedSettings(_:)`` (an extension it cannot tell),
    ///   ``RecorderError/audioUnit(_:)`` (a node or element that cannot be recorded).
    static func resolve(path: String, settings: RecordingSettings?, graph: AudioGraph, node: AUNode,
                        element: AudioUnitElement) throws(RecorderError) -> (RecordingSettings, StreamFormat) {
        let chosen: RecordingSettings
        if let settings { chosen = settings } else { chosen = try RecordingSettings.forPath(path) }
        // A name whose extension says another type than the settings would mislead every reader
        // of the file (a WAV named .opus); an Ogg name fits Vorbis and Opus alike, and a name
        // with no known extension takes what the settings say.
        if settings != nil, let named = try? RecordingSettings.forPath(path).fileType, named != chosen.fileType,
           !(named == .vorbis && chosen.fileType == .opus) {
            throw .unsupportedSettings("the name \"\(path)\" says \(named.rawValue) but the settings say \(chosen.fileType.rawValue): name the file for its type, or leave the settings' type to the name")
        }
        do throws(AudioUnitError) {
            _ = try graph.checkObservable(node, element)
            return (chosen, try graph.nodeInfo(node).streamFormat(scope: .output, element: element))
        } catch { throw .audioUnit(error) }
    }

    /// A gated recorder writes the frames from sample time `time` (the graph's, ``AudioGraph/sampleTime``)
    /// on, until ``closeSpan(at:)``; `until` ends the span ahead (a duration). Thread: control thread.
    func openSpan(at time: Double, until end: Double = .infinity) {
        writer.spans.withLock { $0?.append((time, end)) }
    }

    /// `done` once the frames up to sample time `time` have been written and the file closed
    /// (writer thread); nil: not finishing. Thread: control thread.
    func finish(at time: Double?, _ done: (@Sendable () -> Void)?) {
        writer.onSpanEnd.withLock { $0 = done }
        writer.finishAt.withLock { $0 = time }
    }

    /// `said` once, on the writer thread, when a write first fails. Thread: control thread.
    func whenAWriteFails(_ said: (@Sendable () -> Void)?) {
        writer.onFailure.withLock { $0 = said }
    }

    /// Ends the open span at sample time `time`. Thread: control thread.
    func closeSpan(at time: Double) {
        writer.spans.withLock { spans in
            guard let last = spans?.last, last.end > time else { return }
            spans![spans!.count - 1].end = max(last.start, time)
        }
    }

    /// Frames in the file so far. Thread: any.
    public var framesWritten: UInt64 { writer.written.load(ordering: .relaxed) }

    /// Whether the file holds ``RecordingSettings/frameLimit`` frames, all there is to record
    /// (always false without a limit). The file is complete and valid then; ``stop()`` closes it.
    /// Thread: any.
    public var isComplete: Bool { settings.frameLimit.map { framesWritten >= $0 } ?? false }

    /// Frames lost: dropped by the tap (graph rate) plus frames not written after a write
    /// failure. Thread: any.
    public var framesDropped: UInt64 { (tap?.framesDropped ?? finalDropped) + writer.lost.load(ordering: .relaxed) }
    private var finalDropped: UInt64 = 0

    /// Samples (frames × channels, in the file's channels) beyond ±1.0 that were clipped to
    /// full scale because the file stores integers: 16- or 24-bit WAV and FLAC. Always 0 for
    /// Float32 WAV, Opus, Vorbis and MP3, which keep such samples as they are. A NaN or ±Inf
    /// is not counted here (see ``nonFiniteSampleCount``). Thread: any.
    public var clippedSampleCount: UInt64 { writer.clipped.load(ordering: .relaxed) }

    /// Where frames were dropped because the ring was full (the writer fell behind by more
    /// than ``RecordingSettings/bufferDuration``), oldest first: the first
    /// ``RecordingGap/maximumKept`` gaps; ``gapCount`` counts them all. A gap is known once
    /// the audio after it reaches the writer; after ``stop()`` a drop at the very end (no
    /// audio after it) is listed too. Thread: any; allocates (a copy).
    public var gaps: [RecordingGap] { writer.gaps.withLock { $0 } }

    /// How many gaps there were, including those past ``RecordingGap/maximumKept``. Thread: any.
    public var gapCount: Int { writer.gapCount.load(ordering: .relaxed) }

    /// Test hook: the writer thread sleeps `seconds` (0…600) before it writes its next block,
    /// as a stalled disk would make it — the ring then fills and frames are dropped. The
    /// environment variable `AUDIOGRAPH_TEST_WRITER_STALL_SECONDS` (read once per process)
    /// does the same for every recorder's first block, for tests of the tools. Not for
    /// production use. Thread: any.
    package func stallWriterForTesting(seconds: Double) {
        writer.stallMicroseconds.store(UInt64(max(0, min(600, seconds)) * 1_000_000), ordering: .releasing)
    }

    /// NaN and ±Inf samples that reached the recorder and were written as 0 (a file never holds
    /// them). The graph already replaces them where they enter it and before the device output
    /// (``AudioGraph/nonFiniteSampleCount``), so this counts only what a kernel made on the way
    /// to the recorded element. Counts samples (frames × channels). Thread: any.
    public var nonFiniteSampleCount: UInt64 { writer.nonFinite.load(ordering: .relaxed) }

    /// Whether the recorder is still recording. Thread: control thread.
    public var isRecording: Bool { tap != nil }

    /// The write failure, if one happened (recording continues to count frames as lost). Thread: any.
    public var writeError: RecorderError? { writer.failure.withLock { $0 } }

    /// Stops recording: removes the tap, writes everything it still held, and closes the file
    /// with a final header. Calling it again does nothing.
    /// - Throws: ``RecorderError/writeFailed(path:reason:)`` when a write failed during the
    ///   recording (the file is still closed and valid up to the failure);
    ///   ``RecorderError/audioUnit(_:)`` with `cannotDoInCurrentContext` on the render thread
    ///   (nothing changes).
    /// - Thread: control thread; waits for the writer to finish.
    public func stop() throws(RecorderError) {
        guard let tap else { return }
        do throws(AudioUnitError) { try graph.removeTap(tap) } catch { throw .audioUnit(error) }
        finalDropped = tap.framesDropped
        self.tap = nil
        writer.close()
        writer.noteTrailingDrop(totalDropped: finalDropped)
        if let failure = writeError { throw failure }
    }

    deinit {
        if let tap { try? graph.removeTap(tap) }
        writer.close()
    }
}

/// Where a recording lost frames because the tap's ring was full (the writer thread fell
/// behind by more than ``RecordingSettings/bufferDuration``, a stalled disk): the frames from
/// ``sampleTime`` for ``frameCount`` frames are not in the file, which goes on at ``fileFrame``
/// with the audio that followed.
public struct RecordingGap: Sendable, Equatable, CustomStringConvertible {
    /// Graph sample time (frames at the graph's rate since the graph started,
    /// ``AudioGraph/sampleTime``) of the first frame missing.
    public let sampleTime: Double
    /// Frames missing, at the graph's rate (the element's frames, as ``Recorder/framesDropped``).
    public let frameCount: UInt64
    /// The file frame (at the file's rate, from 0) where the gap sits: the frames the file
    /// held, or was owed, when the audio after the gap arrived.
    public let fileFrame: UInt64

    /// The most gaps a recorder lists (``Recorder/gaps``); more are only counted.
    public static let maximumKept = 64

    /// A gap: see the properties.
    public init(sampleTime: Double, frameCount: UInt64, fileFrame: UInt64) {
        self.sampleTime = sampleTime
        self.frameCount = frameCount
        self.fileFrame = fileFrame
    }

    /// "N frames at sample time T (file frame F)".
    public var description: String { "\(frameCount) frames at sample time \(UInt64(max(0, sampleTime))) (file frame \(fileFrame))" }
}

/// The writer thread's side of a recording: the open file and its counters.
/// SAFETY (`@unchecked Sendable`): confined to the recording tap's consumer thread.
final class RecordingWriter: @unchecked Sendable {
    /// The SNDFILE handle's address (0 once closed), locked: the writer thread and `close` never overlap.
    private let file: ControlLock<UInt>
    let path: String
    let channels: Int
    let sampleFormat: RecordingSettings.SampleFormat
    /// Frames to write at most; `UInt64.max` for no limit.
    let frameLimit: UInt64
    let written = Atomic<UInt64>(0)
    let lost = Atomic<UInt64>(0)
    /// NaN and ±Inf samples written as 0.
    let nonFinite = Atomic<UInt64>(0)
    /// Samples beyond ±1.0 clipped to an integer format's range.
    let clipped = Atomic<UInt64>(0)
    /// The first ``RecordingGap/maximumKept`` gaps (capacity reserved up front), and how many
    /// there were; the writer thread appends, anyone copies.
    let gaps: ControlLock<[RecordingGap]>
    let gapCount = Atomic<Int>(0)
    /// Graph frames of every gap noted so far (writer thread, then `close`'s caller).
    private var gapFrames: UInt64 = 0
    /// Graph sample time just after the last block received; nil before the first.
    private var nextSampleTime: Double?
    /// Test hook: microseconds to sleep before the next block (then reset to 0).
    let stallMicroseconds = Atomic<UInt64>(0)
    /// `AUDIOGRAPH_TEST_WRITER_STALL_SECONDS`, read once per process: a test hook that stalls
    /// every recorder's first block that long (0…600 s; anything else is ignored).
    static let environmentStallMicroseconds: UInt64 = {
        guard let text = getenv("AUDIOGRAPH_TEST_WRITER_STALL_SECONDS"), let seconds = Double(String(cString: text)),
              seconds.isFinite, seconds > 0, seconds <= 600 else { return 0 }
        return UInt64(seconds * 1_000_000)
    }()
    let failure = ControlLock<RecorderError?>(nil)
    private var shorts: [Int16] = []
    private var ints: [Int32] = []
    /// A block with NaN or ±Inf in it, copied with those as 0 (grown once, then reused).
    private var scrubbed: [Float] = []
    /// When set, only frames whose sample time (the source element's, as a tap block gives it)
    /// falls in one of these half-open spans are written: ``AudioRecorder``'s record and pause.
    /// Nil: every frame.
    let spans: ControlLock<[(start: Double, end: Double)]?>
    /// Source frames per file frame (the source element's rate over the file's).
    let ratio: Double
    /// Called once on the writer thread when the frames up to ``finishAt`` (a source sample
    /// time) have been written and the file closed: ``AudioRecorder/record(forDuration:)``'s
    /// finish. Nil ``finishAt``: not finishing (no duration, or paused).
    let onSpanEnd = ControlLock<(@Sendable () -> Void)?>(nil)
    let finishAt = ControlLock<Double?>(nil)
    /// Called once on the writer thread when a write first fails (the failure is in
    /// ``failure``): ``AudioRecorder`` finishes with false at once.
    let onFailure = ControlLock<(@Sendable () -> Void)?>(nil)

    init(file: OpaquePointer, path: String, channels: Int, sampleFormat: RecordingSettings.SampleFormat, frameLimit: UInt64,
         gated: Bool = false, ratio: Double = 1) {
        self.file = ControlLock(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(file))))
        self.path = path
        self.channels = channels
        self.sampleFormat = sampleFormat
        self.frameLimit = frameLimit
        spans = ControlLock(gated ? [] : nil)
        self.ratio = ratio
        var kept: [RecordingGap] = []
        kept.reserveCapacity(RecordingGap.maximumKept)
        gaps = ControlLock(kept)
        stallMicroseconds.store(RecordingWriter.environmentStallMicroseconds, ordering: .relaxed)
    }

    /// Notes a gap of `frames` graph frames starting at graph sample time `time`.
    private func noteGap(at time: Double, frames: UInt64) {
        let fileFrame = written.load(ordering: .relaxed) + lost.load(ordering: .relaxed)
        gapFrames += frames
        gapCount.add(1, ordering: .relaxed)
        gaps.withLock { list in
            if list.count < RecordingGap.maximumKept { list.append(RecordingGap(sampleTime: time, frameCount: frames, fileFrame: fileFrame)) }
        }
    }

    /// After the tap is removed and the writer thread has ended: frames the tap dropped with no
    /// audio after them (so no block announced them) become a last gap at the end. Control thread.
    func noteTrailingDrop(totalDropped: UInt64) {
        guard totalDropped > gapFrames else { return }
        noteGap(at: nextSampleTime ?? 0, frames: totalDropped - gapFrames)
    }

    /// Sleeps the test hook's stall, if one is set. The writer thread.
    private func stallIfAsked() {
        let micros = stallMicroseconds.exchange(0, ordering: .acquiringAndReleasing)
        guard micros > 0 else { return }
        var request = timespec(tv_sec: Int(micros / 1_000_000), tv_nsec: Int(micros % 1_000_000) * 1_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// The runs of `block`'s frames that fall in the spans, as (first frame, count); the whole
    /// block when there are no spans.
    private func runs(of block: AudioTapBlock) -> [(Int, Int)] {
        guard let spans = spans.withLock({ $0 }) else { return [(0, block.frameCount)] }
        var runs: [(Int, Int)] = []
        for span in spans {
            // Frame i's time is sampleTime + i × ratio: the frames whose time is in [start, end).
            let first = max(0, Int(((span.start - block.sampleTime) / ratio).rounded(.up)))
            let end = min(block.frameCount, span.end.isInfinite ? block.frameCount : Int(((span.end - block.sampleTime) / ratio).rounded(.up)))
            if end > first { runs.append((first, end - first)) }
        }
        return runs
    }

    /// Writes one interleaved Float32 block, or the part of it that fits the frame limit (the
    /// rest is not recorded, by request: neither written nor lost). The tap's thread.
    func write(_ block: AudioTapBlock) {
        stallIfAsked()
        if block.framesDroppedBefore > 0 {
            noteGap(at: block.sampleTime - Double(block.framesDroppedBefore), frames: block.framesDroppedBefore)
        }
        nextSampleTime = block.sampleTime + Double(block.frameCount) * ratio
        for (first, count) in runs(of: block) { write(block, from: first, count: count) }
        // The finish time (a duration's end) that this block reached: the recording is complete.
        guard let end = finishAt.withLock({ $0 }), block.sampleTime + Double(block.frameCount) * ratio >= end,
              let done = onSpanEnd.withLock({ callback in defer { callback = nil }; return callback }) else { return }
        close()
        done()
    }

    private func write(_ block: AudioTapBlock, from first: Int, count: Int) {
        file.withLock { address in
            // Frames still to record: those written and those lost both count against the limit.
            let recorded = written.load(ordering: .relaxed) + lost.load(ordering: .relaxed)
            let frames = Int(min(UInt64(count), frameLimit > recorded ? frameLimit - recorded : 0))
            guard frames > 0 else { return }
            guard let file = OpaquePointer(bitPattern: address), failure.withLock({ $0 == nil }) else {
                lost.add(UInt64(frames), ordering: .relaxed)
                return
            }
            let samples = frames * channels
            // The recorder's own line of defence: NaN and ±Inf are written as 0 (and counted),
            // never into the file (a float file would keep them; the integer conversions below
            // have no value for them).
            let offset = first * channels
            let clean = block.buffers[0].withUnsafeBytes { raw in
                NonFinite.allFinite(raw.bindMemory(to: Float.self).baseAddress! + offset, frames: samples)
            }
            let done: sf_count_t
            if clean {
                done = block.buffers[0].withUnsafeBytes { raw in
                    writeFloats(file, UnsafeBufferPointer(rebasing: raw.bindMemory(to: Float.self)[offset..<(offset + samples)]), frames: frames)
                }
            } else {
                // A scratch copy kept between blocks (the tap's block is not ours to write).
                if scrubbed.count < samples { scrubbed = [Float](repeating: 0, count: samples) }
                let replaced = scrubbed.withUnsafeMutableBufferPointer { f in
                    block.buffers[0].withUnsafeBytes { raw in
                        f.baseAddress!.update(from: raw.bindMemory(to: Float.self).baseAddress! + offset, count: samples)
                    }
                    return NonFinite.replace(f.baseAddress!, frames: samples)
                }
                nonFinite.add(replaced, ordering: .relaxed)
                done = scrubbed.withUnsafeBufferPointer { writeFloats(file, UnsafeBufferPointer(rebasing: $0[0..<samples]), frames: frames) }
            }
            written.add(UInt64(max(0, done)), ordering: .relaxed)
            if done < frames {
                lost.add(UInt64(frames - Int(max(0, done))), ordering: .relaxed)
                let reason = String(cString: sf_strerror(file))
                failure.withLock { $0 = .writeFailed(path: path, reason: reason == "No Error." ? "short write (disk full?)" : reason) }
                if let said = onFailure.withLock({ callback in defer { callback = nil }; return callback }) { said() }
            }
        }
    }

    /// Writes `frames` interleaved frames `x` (`[frame][channel]`, all finite) in the file's
    /// sample format; returns the frames written. The tap's thread.
    private func writeFloats(_ file: OpaquePointer, _ x: UnsafeBufferPointer<Float>, frames: Int) -> sf_count_t {
        let samples = frames * channels
        switch sampleFormat {
        case .float32:
            return sf_writef_float(file, x.baseAddress, sf_count_t(frames))
        case .int16:
            if shorts.count < samples { shorts = [Int16](repeating: 0, count: samples) }
            var over: UInt64 = 0
            for i in 0..<samples {
                if x[i] > 1 || x[i] < -1 { over += 1 }
                shorts[i] = Int16(clamping: Int(lrintf(x[i] * 32768)))
            }
            if over > 0 { clipped.add(over, ordering: .relaxed) }
            return sf_writef_short(file, shorts, sf_count_t(frames))
        case .int24:
            // libsndfile keeps the top 24 bits of each Int32.
            if ints.count < samples { ints = [Int32](repeating: 0, count: samples) }
            var over: UInt64 = 0
            defer { if over > 0 { clipped.add(over, ordering: .relaxed) } }
            for i in 0..<samples {
                if x[i] > 1 || x[i] < -1 { over += 1 }
                let v = min(max(Int(lrintf(x[i] * 8_388_608)), -8_388_608), 8_388_607)
                ints[i] = Int32(v) << 8
            }
            return sf_writef_int(file, ints, sf_count_t(frames))
        }
    }

    /// Writes the final header and closes the file. Idempotent.
    func close() {
        file.withLock { address in
            guard let f = OpaquePointer(bitPattern: address) else { return }
            sf_write_sync(f)
            sf_close(f)
            address = 0
        }
    }
}
