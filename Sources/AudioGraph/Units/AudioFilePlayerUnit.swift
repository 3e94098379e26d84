// Units: the file player (AudioFilePlayer analogue) — disk thread, ring, render side.
import CJack
import CSndFile
import CSoundTouch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Plays an audio file into the graph: the `kAudioUnitSubType_AudioFilePlayer` analogue, with
/// no inputs and one output element.
///
/// A disk thread reads the file with libsndfile (WAV, FLAC, AIFF, Ogg… anything it reads),
/// converts it to the unit's output format with an ``AudioConverter`` (libsamplerate across
/// rates; 1 → N copies, N → 1 averages) and writes interleaved Float32 frames into a lock-free
/// ring (libjack's `jack_ringbuffer`, one second deep); the render thread only reads the ring.
/// When the ring runs dry while playing, the missing frames render as silence and count in
/// ``underrunCount`` / ``underrunFrames`` — the render thread never waits for the disk.
///
/// Control: ``open(_:)``, ``prepareToPlay()``, ``play()``, ``play(atSampleTime:)`` (a start at
/// the graph's sample time, to the frame), ``stop()`` (pauses; ``play()`` resumes where it
/// stopped), ``seek(toFrame:)``, ``isLooping`` and ``loopsRemaining``, ``position`` (the file
/// frame playing now), and with ``enablesRate`` a ``rate`` with the pitch kept. ``AudioPlayer``
/// builds AVAudioPlayer's calls on this unit. After a seek the output is silent until the disk
/// thread has refilled the ring from the new position (typically a few milliseconds; not
/// counted as an underrun). At the end of the file (not looping) the unit renders silence and
/// ``isAtEnd`` turns true.
///
/// **Rate** (``enablesRate`` set before the first ``prepareToPlay()``): the disk thread runs the
/// converted frames through SoundTouch's WSOLA time-stretch (Olli Parviainen's SoundTouch, as
/// ``TimePitchUnit``) at tempo ``rate`` before the ring, reading the file as fast as the tempo
/// needs — a unit after the player could only stretch what one slice brings. The ring is then
/// kept at most ``rateLookahead`` seconds ahead, so a new rate is heard within that time.
/// Without ``enablesRate`` the frames go to the ring untouched (bit for bit at the same rate).
///
/// The output format (rate, channels) is the unit's output element 0 format when ``play()`` is
/// called: set it (uninitialized) or let it follow the graph, then call play after
/// `initialize()`. Thread: control calls from a control thread; counters from any thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit; the player's state is atomics and a ring between its disk thread and the render thread.
public final class AudioFilePlayerUnit: AudioUnit, @unchecked Sendable {
    let core = PlayerCore()
    private var file: OpaquePointer?
    private var disk: ConsumerThread?

    /// Why the last ``open(_:)`` refused the file, in libsndfile's words ("File contains data in
    /// an unknown format.", "No such file or directory"…); nil after one that succeeded.
    public private(set) var openFailureReason: String?

    /// The open file's frame count, sample rate (Hz) and channel count; nil before ``open(_:)``.
    public private(set) var fileFormat: (frames: Int64, sampleRate: Double, channels: Int)?
    /// The output rate the disk thread converts to (Hz), fixed at the first ``prepareToPlay()``.
    private var outputRate: Double = 0
    /// Whether the disk thread time-stretches (``rate``); set before the first
    /// ``prepareToPlay()`` (later settings are ignored).
    public var enablesRate: Bool {
        get { rateEnabled }
        set { if disk == nil { rateEnabled = newValue } }
    }
    private var rateEnabled = false

    /// How far ahead of the render thread the ring is filled when ``enablesRate`` is on, in
    /// seconds: the longest a new ``rate`` waits to be heard.
    public static let rateLookahead = 0.2

    /// Sets the playback rate with the pitch kept, ``TimePitchUnit/rateRange`` (0.25…4; 1
    /// normal), with ``enablesRate``; heard within ``rateLookahead``.
    /// - Throws: ``AudioUnitError/invalidParameter`` (out of range or not finite),
    ///   ``AudioUnitError/uninitialized`` (``enablesRate`` is off). Nothing changes on a throw.
    /// - Thread: any.
    public func setRate(_ rate: Float) throws(AudioUnitError) {
        guard rate.isFinite, TimePitchUnit.rateRange.contains(rate) else { throw .invalidParameter }
        guard rateEnabled else { throw .uninitialized }
        core.tempo.store(Double(rate).bitPattern, ordering: .relaxed)
    }

    /// The rate last set (1 before any). Thread: any.
    public var rate: Float { Float(Double(bitPattern: core.tempo.load(ordering: .relaxed))) }

    /// The graph whose clock ``play(atSampleTime:)`` started on, retained while the render
    /// thread may read it.
    private var clock: RenderShared?

    /// Creates a player with a stereo 48 kHz output and no file.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .audioFilePlayer, inputFormats: [], outputFormats: [stereo])
        renderLinks.context.store(Unmanaged.passUnretained(core).toOpaque(), ordering: .releasing)
    }

    deinit {
        stopDiskThread()
        if let file { sf_close(file) }
    }

    override var kernelKind: KernelKind { .filePlayer }

    /// Opens a file for playback, replacing any open one; playback is stopped and positioned
    /// at frame 0.
    /// - Parameter path: any file libsndfile reads.
    /// - Throws: ``AudioUnitError/invalidFile`` (−10871) when libsndfile cannot read it; the
    ///   player is unchanged.
    /// - Thread: control thread.
    public func open(_ path: String) throws(AudioUnitError) {
        var info = SF_INFO()
        guard let opened = sf_open(path, Int32(SFM_READ), &info) else {
            openFailureReason = String(cString: sf_strerror(nil))
            throw .invalidFile
        }
        openFailureReason = nil
        stopDiskThread()
        core.playing.store(false, ordering: .releasing)
        // Take the ring away from the render thread before touching it.
        core.ringAddress.store(0, ordering: .sequentiallyConsistent)
        _ = graph?.waitForRenderThreadToPass()
        if let file { sf_close(file) }
        file = opened
        fileFormat = (Int64(info.frames), Double(info.samplerate), Int(info.channels))
        core.reset()
    }

    /// Starts (or resumes) playback. The first time, the disk thread starts filling the ring and
    /// this call waits (2 s at most) until it holds a quarter second or the whole file; the render
    /// thread plays from its next slice.
    /// - Throws: ``AudioUnitError/invalidFile`` (no file open), ``AudioUnitError/formatNotSupported``
    ///   (no converter from the file to the output format, e.g. a rate ratio beyond 256).
    /// - Thread: control thread; starts the disk thread and waits for its first reads.
    public func play() throws(AudioUnitError) {
        try prepareToPlay()
        core.startAt.store(PlayerCore.notScheduled, ordering: .releasing)
        core.playing.store(true, ordering: .releasing)
    }

    /// Starts playback at the graph's sample time `sampleTime` (``AudioGraph/sampleTime``: frames
    /// at the device rate since the graph started), to the frame: the slice that holds that time
    /// plays silence before it and the file's frames from it. A time already past starts with
    /// the next slice. The `AVAudioPlayer.play(atTime:)` analogue (its device time, in frames).
    /// - Throws: ``AudioUnitError/uninitialized`` (the unit is in no graph),
    ///   ``AudioUnitError/invalidPropertyValue`` (a negative or non-finite time), and as ``play()``.
    ///   Nothing changes on a throw.
    /// - Thread: control thread.
    public func play(atSampleTime sampleTime: Double) throws(AudioUnitError) {
        guard sampleTime.isFinite, sampleTime >= 0, sampleTime < 0x1p62 else { throw .invalidPropertyValue }
        guard let graph else { throw .uninitialized }
        try prepareToPlay()
        if clock !== graph.shared {
            // The render thread reads the clock only while a start is scheduled: none is now.
            core.startAt.store(PlayerCore.notScheduled, ordering: .sequentiallyConsistent)
            _ = graph.waitForRenderThreadToPass()
            clock = graph.shared
            core.clockAddress.store(UInt(bitPattern: Unmanaged.passUnretained(graph.shared).toOpaque()), ordering: .releasing)
        }
        core.startAt.store(UInt64(sampleTime.rounded()), ordering: .releasing)
        core.playing.store(true, ordering: .releasing)
    }

    /// Starts the disk thread and waits (2 s at most) until it holds a quarter second or the
    /// whole file, without playing: `AVAudioPlayer.prepareToPlay()`. Called by ``play()``;
    /// calling it again does nothing.
    /// - Throws: ``AudioUnitError/invalidFile`` (no file open), ``AudioUnitError/formatNotSupported``
    ///   (no converter from the file to the output format).
    /// - Thread: control thread.
    public func prepareToPlay() throws(AudioUnitError) {
        guard let file, let fileFormat else { throw .invalidFile }
        if disk == nil {
            let output = try StreamFormat.float32(sampleRate: outputFormats[0].sampleRate,
                                                  channels: outputFormats[0].channelsPerFrame, interleaved: true)
            let source = try StreamFormat.float32(sampleRate: fileFormat.sampleRate, channels: UInt32(fileFormat.channels), interleaved: true)
            let converter = source == output ? nil : try AudioConverter(from: source, to: output, maximumInputFrames: 1024)
            guard core.prepare(channels: Int(output.channelsPerFrame), rate: output.sampleRate) else { throw .failedInitialization }
            outputRate = output.sampleRate
            var stretch: OpaquePointer?
            if rateEnabled {
                guard let made = csoundtouch_create(UInt32(output.channelsPerFrame), UInt32(output.sampleRate)) else { throw .failedInitialization }
                stretch = made
            }
            let reader = DiskReader(core: core, file: file, fileChannels: fileFormat.channels, converter: converter, stretch: stretch,
                                    lookahead: Int(output.sampleRate * AudioFilePlayerUnit.rateLookahead))
            core.quit.store(false, ordering: .releasing)
            disk = ConsumerThread { reader.run() }
            // As AVAudioPlayer's prepareToPlay: the first quarter second is read before playing
            // starts, so the first slices never find the ring still empty (an underrun at the
            // very start, seen on a loaded 2-core CI machine). 2 s at most.
            let target = Int(output.sampleRate / 4)
            var waited = 0
            while core.bufferedFrames < target && !core.endWritten.load(ordering: .acquiring) && waited < 2_000 {
                usleep(1_000)
                waited += 1
            }
        }
    }

    /// Stops playback; the position stays, so ``play()`` resumes from it. Thread: any.
    public func stop() { core.playing.store(false, ordering: .releasing) }

    /// Moves the play position.
    /// - Parameter frame: 0…frames in the file (at the file's rate).
    /// - Throws: ``AudioUnitError/invalidFile`` (no file), ``AudioUnitError/invalidPropertyValue``
    ///   (out of range).
    /// - Thread: control thread.
    public func seek(toFrame frame: Int64) throws(AudioUnitError) {
        guard let fileFormat else { throw .invalidFile }
        guard frame >= 0, frame <= fileFormat.frames else { throw .invalidPropertyValue }
        core.seekTarget.store(frame, ordering: .relaxed)
        core.seekRequest.add(1, ordering: .releasing)
    }

    /// Whether playback wraps to the start at the end of the file for ever (seamless: the
    /// converter's stream continues across the wrap); setting it sets ``loopsRemaining`` to −1
    /// (true) or 0 (false). Thread: any.
    public var isLooping: Bool {
        get { core.loopsRemaining.load(ordering: .relaxed) < 0 }
        set { core.loopsRemaining.store(newValue ? -1 : 0, ordering: .relaxed) }
    }

    /// How many more times playback wraps to the start at the end of the file: 0 (the end
    /// ends it), n > 0 (each wrap counts one down), −1 (for ever). Seamless, as ``isLooping``.
    /// Thread: any.
    public var loopsRemaining: Int {
        get { core.loopsRemaining.load(ordering: .relaxed) }
        set { core.loopsRemaining.store(max(-1, newValue), ordering: .relaxed) }
    }

    /// The frame of the file playing now (at the file's rate, 0…frames): where the last seek
    /// (or frame 0) put it plus what has played since, wrapped at the file's end while looping;
    /// right after ``seek(toFrame:)``, its target.
    /// What the render thread has taken from the player; a unit after it (a time-pitch's
    /// latency) delays what is heard. Thread: any.
    public var position: Double {
        guard let fileFormat, fileFormat.frames > 0 else { return 0 }
        // A seek not yet taken by the render thread: its target.
        if core.flushed.load(ordering: .acquiring) != core.seekRequest.load(ordering: .acquiring) {
            return Double(core.seekTarget.load(ordering: .relaxed))
        }
        let played = rateEnabled ? Double(bitPattern: core.playedFileFrames.load(ordering: .acquiring))
                                 : Double(core.playedSinceSeek.load(ordering: .acquiring))
        let base = Double(core.positionBase.load(ordering: .relaxed))
        let ratio = outputRate > 0 ? fileFormat.sampleRate / outputRate : 1
        let frame = base + played * ratio
        let length = Double(fileFormat.frames)
        if isAtEnd { return length }
        return frame < length ? frame : frame.truncatingRemainder(dividingBy: length)
    }

    /// Called on the disk thread once each time playback reaches the end of the file (not
    /// looping) and has rendered all of it, as ``isAtEnd`` turns true. Set it from the control
    /// thread; it must not block.
    public var onEnd: (@Sendable () -> Void)? {
        get { core.endHandler.withLock { $0 } }
        set { core.endHandler.withLock { $0 = newValue } }
    }

    /// Whether the player is playing (not stopped). Thread: any.
    public var isPlaying: Bool { core.playing.load(ordering: .relaxed) }
    /// Whether playback reached the end of the file (not looping) and rendered all of it. Thread: any.
    public var isAtEnd: Bool { core.atEnd.load(ordering: .relaxed) }
    /// Slices that found too few frames in the ring while playing. Thread: any.
    public var underrunCount: UInt64 { core.underruns.load(ordering: .relaxed) }
    /// Frames rendered as silence because of underruns. Thread: any.
    public var underrunFrames: UInt64 { core.underrunFrames.load(ordering: .relaxed) }
    /// Frames of the file rendered (at the output rate). Thread: any.
    public var framesPlayed: UInt64 { core.played.load(ordering: .relaxed) }
    /// Frames waiting in the ring (at the output rate). Thread: any.
    public var bufferedFrames: Int { core.bufferedFrames }

    /// For the offline renderer: waits (5 s at most) until the next slice of `frames` output
    /// frames can play what the file holds — a seek asked for has been taken by the disk thread,
    /// and the ring holds the slice or the file's end. Returns at once when the player is not
    /// playing. Control thread (the offline renderer's, between slices).
    func waitUntilSliceIsRead(frames: Int) {
        guard disk != nil else { return }
        var waited = 0
        while core.diskParked.load(ordering: .acquiring) != core.seekRequest.load(ordering: .acquiring)
              && core.flushed.load(ordering: .acquiring) != core.seekRequest.load(ordering: .acquiring) && waited < 25_000 {
            usleep(200); waited += 1
        }
        while isPlaying && core.bufferedFrames < frames && !core.endWritten.load(ordering: .acquiring) && waited < 25_000 {
            usleep(200); waited += 1
        }
    }

    private func stopDiskThread() {
        guard let disk else { return }
        core.quit.store(true, ordering: .releasing)
        disk.join()
        self.disk = nil
    }
}

/// What the render thread and the disk thread share.
/// SAFETY (`@unchecked Sendable`): atomics and a single-producer/single-consumer ring (disk thread in, render thread out).
final class PlayerCore: @unchecked Sendable {
    /// The ring of interleaved Float32 frames at the output format (nil until the first play).
    let ringAddress = Atomic<UInt>(0)
    let channels = Atomic<Int>(0)
    let playing = Atomic<Bool>(false)
    /// Wraps left at the file's end: 0 none, −1 for ever (disk thread counts down).
    let loopsRemaining = Atomic<Int>(0)
    let quit = Atomic<Bool>(false)
    /// The graph sample time to start at (``notScheduled``: play at once).
    let startAt = Atomic<UInt64>(PlayerCore.notScheduled)
    static let notScheduled = UInt64.max
    /// The graph's `RenderShared` (unretained; the unit retains it) whose `sampleTime` dates a
    /// scheduled start; 0 before the first ``AudioFilePlayerUnit/play(atSampleTime:)``.
    let clockAddress = Atomic<UInt>(0)
    /// The file frame the last flush (a seek, or the start) left playback at, and the output
    /// frames played since (render thread).
    let positionBase = Atomic<Int64>(0)
    let playedSinceSeek = Atomic<UInt64>(0)
    /// With a rate: the file's frames (at the output rate) played since the last flush, a
    /// Double's bits — each output frame counts the tempo the disk thread last applied.
    let playedFileFrames = Atomic<UInt64>(0)
    /// The rate asked for and the one the disk thread applies now (Doubles' bits).
    let tempo = Atomic<UInt64>(1.0.bitPattern)
    let appliedTempo = Atomic<UInt64>(1.0.bitPattern)
    /// The unit's ``AudioFilePlayerUnit/onEnd``.
    let endHandler = ControlLock<(@Sendable () -> Void)?>(nil)
    /// Disk thread: the file is exhausted and everything is in the ring.
    let endWritten = Atomic<Bool>(false)
    let atEnd = Atomic<Bool>(false)
    // Seek protocol: control bumps `seekRequest`; the disk thread stops writing and sets
    // `diskParked`; the render thread then empties the ring and sets `flushed`; the disk thread
    // seeks and writes again. The render thread plays silence while `flushed` lags the request.
    let seekRequest = Atomic<UInt32>(0)
    let seekTarget = Atomic<Int64>(0)
    let diskParked = Atomic<UInt32>(0)
    let flushed = Atomic<UInt32>(0)
    let underruns = Atomic<UInt64>(0)
    let underrunFrames = Atomic<UInt64>(0)
    let played = Atomic<UInt64>(0)
    private var ring: UnsafeMutablePointer<jack_ringbuffer_t>?

    /// Gives the render thread an empty ring for `channels` (one second at `rate`); false
    /// when libjack cannot allocate it. Control thread, with the ring detached (``AudioFilePlayerUnit/open(_:)``).
    func prepare(channels count: Int, rate: Double) -> Bool {
        if ringAddress.load(ordering: .sequentiallyConsistent) != 0 { return true }
        if let existing = ring, channels.load(ordering: .relaxed) == count {
            jack_ringbuffer_reset(existing)
        } else {
            if let ring { jack_ringbuffer_free(ring) }
            ring = jack_ringbuffer_create(Int(rate) * count * MemoryLayout<Float>.stride)
        }
        guard let ring else { return false }
        _ = jack_ringbuffer_mlock(ring)
        channels.store(count, ordering: .relaxed)
        ringAddress.store(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(ring))), ordering: .sequentiallyConsistent)
        return true
    }

    /// Back to frame 0 (control thread; disk thread stopped, ring detached).
    func reset() {
        endWritten.store(false, ordering: .relaxed)
        atEnd.store(false, ordering: .relaxed)
        flushed.store(seekRequest.load(ordering: .relaxed), ordering: .relaxed)
        diskParked.store(seekRequest.load(ordering: .relaxed), ordering: .relaxed)
        played.store(0, ordering: .relaxed)
        positionBase.store(0, ordering: .relaxed)
        playedSinceSeek.store(0, ordering: .releasing)
        playedFileFrames.store(0.0.bitPattern, ordering: .releasing)
        startAt.store(PlayerCore.notScheduled, ordering: .relaxed)
    }

    var bufferedFrames: Int {
        guard let ring = UnsafeMutablePointer<jack_ringbuffer_t>(bitPattern: ringAddress.load(ordering: .acquiring)) else { return 0 }
        let frameBytes = max(1, channels.load(ordering: .relaxed)) * MemoryLayout<Float>.stride
        return jack_ringbuffer_read_space(ring) / frameBytes
    }

    deinit { if let ring { jack_ringbuffer_free(ring) } }

    /// Renders one slice. Render thread.
    @_noLocks
    func render(_ output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels outChannels: Int, offset: Int, frames: Int) {
        for c in 0..<outChannels { (output[c] + offset).update(repeating: 0, count: frames) }
        // Sequentially consistent: pairs with open()'s detach-then-wait (see waitForRenderThreadToPass).
        guard let ring = UnsafeMutablePointer<jack_ringbuffer_t>(bitPattern: ringAddress.load(ordering: .sequentiallyConsistent)) else { return }
        // Seek: once the disk thread has parked, drop whatever the ring holds.
        let request = seekRequest.load(ordering: .acquiring)
        if flushed.load(ordering: .relaxed) != request {
            if diskParked.load(ordering: .acquiring) == request {
                let stale = RealTime.ringReadSpace(ring)
                RealTime.ringReadAdvance(ring, stale)
                atEnd.store(false, ordering: .relaxed)
                positionBase.store(seekTarget.load(ordering: .relaxed), ordering: .relaxed)
                playedSinceSeek.store(0, ordering: .releasing)
                playedFileFrames.store(0.0.bitPattern, ordering: .releasing)
                flushed.store(request, ordering: .releasing)
            }
            return
        }
        guard playing.load(ordering: .relaxed) else { return }
        var offset = offset, frames = frames
        let start = startAt.load(ordering: .acquiring)
        if start != PlayerCore.notScheduled {
            // A start at a sample time: silence before it, the file from it.
            guard let clock = UnsafeRawPointer(bitPattern: clockAddress.load(ordering: .acquiring)) else { return }
            let now = Unmanaged<RenderShared>.fromOpaque(clock)._withUnsafeGuaranteedRef { $0.sampleTime.load(ordering: .relaxed) } &+ UInt64(offset)
            if now &+ UInt64(frames) <= start { return }
            if now < start {
                let skip = Int(start &- now)
                offset &+= skip
                frames &-= skip
            }
            _ = startAt.compareExchange(expected: start, desired: PlayerCore.notScheduled, ordering: .relaxed)
        }
        let ringChannels = channels.load(ordering: .relaxed)
        let frameBytes = ringChannels &* MemoryLayout<Float>.stride
        guard frameBytes > 0 else { return }
        let end = endWritten.load(ordering: .acquiring)  // before the space: frames written before `end` are counted
        let available = RealTime.ringReadSpace(ring) / frameBytes
        let n = min(available, frames)
        if n > 0 {
            FilePlayerKernel.deinterleave(ring, into: output, channels: outChannels, ringChannels: ringChannels, offset: offset, frames: n)
            RealTime.ringReadAdvance(ring, n &* frameBytes)
            played.store(played.load(ordering: .relaxed) &+ UInt64(n), ordering: .relaxed)
            playedSinceSeek.store(playedSinceSeek.load(ordering: .relaxed) &+ UInt64(n), ordering: .releasing)
            let fileFrames = Double(bitPattern: playedFileFrames.load(ordering: .relaxed))
                + Double(n) * Double(bitPattern: appliedTempo.load(ordering: .relaxed))
            playedFileFrames.store(fileFrames.bitPattern, ordering: .releasing)
        }
        if n < frames {
            if end {
                atEnd.store(true, ordering: .relaxed)
            } else {
                underruns.store(underruns.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
                underrunFrames.store(underrunFrames.load(ordering: .relaxed) &+ UInt64(frames &- n), ordering: .relaxed)
            }
        }
    }
}

extension FilePlayerKernel {
    /// Copies `frames` interleaved frames from the ring's read side into `output[c][offset…]`
    /// (a ring with fewer channels repeats its last one), across the ring's two segments;
    /// does not advance the ring. Render thread. Its own function, so the scheduled-start
    /// arithmetic in `render` does not take the registers this loop needs (measured: +3
    /// instructions per frame of stack reloads when inlined; Docs/Performance.md).
    @_noLocks @inline(never)
    static func deinterleave(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>, into output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
                             channels outChannels: Int, ringChannels: Int, offset: Int, frames: Int) {
        let frameBytes = ringChannels &* MemoryLayout<Float>.stride
        var vector = (jack_ringbuffer_data_t(), jack_ringbuffer_data_t())
        withUnsafeMutablePointer(to: &vector) { v in
            v.withMemoryRebound(to: jack_ringbuffer_data_t.self, capacity: 2) { vec in
                RealTime.ringReadVector(ring, vec)
                for f in 0..<frames {
                    let byte = f &* frameBytes
                    let first = vec[0].len
                    let segment = byte < first ? vec[0] : vec[1]
                    let start = byte < first ? byte : byte &- first
                    guard let base = segment.buf else { break }
                    let frame = UnsafeRawPointer(base) + start
                    for c in 0..<outChannels {
                        let k = c < ringChannels ? c : ringChannels &- 1
                        output[c][offset &+ f] = frame.loadUnaligned(fromByteOffset: k &* 4, as: Float.self)
                    }
                }
            }
        }
    }
}

/// The disk thread: reads, converts, fills the ring; follows seeks and loops.
/// SAFETY (`@unchecked Sendable`): confined to the player's disk thread.
final class DiskReader: @unchecked Sendable {
    let core: PlayerCore
    let file: OpaquePointer
    let fileChannels: Int
    let converter: AudioConverter?
    /// SoundTouch at the player's tempo (nil: no rate); owned, destroyed with the reader.
    let stretch: OpaquePointer?
    /// With a rate: the most frames the ring is filled ahead.
    let lookahead: Int
    static let chunk = 1024

    init(core: PlayerCore, file: OpaquePointer, fileChannels: Int, converter: AudioConverter?, stretch: OpaquePointer?, lookahead: Int) {
        self.core = core
        self.file = file
        self.fileChannels = fileChannels
        self.converter = converter
        self.stretch = stretch
        self.lookahead = lookahead
    }

    deinit { if let stretch { csoundtouch_destroy(stretch) } }

    func run() {
        guard let ring = UnsafeMutablePointer<jack_ringbuffer_t>(bitPattern: core.ringAddress.load(ordering: .acquiring)) else { return }
        let outChannels = core.channels.load(ordering: .relaxed)
        let frameBytes = outChannels * MemoryLayout<Float>.stride
        var input = [Float](repeating: 0, count: DiskReader.chunk * fileChannels)
        let capacity = converter?.maximumOutputFrames(forInputFrames: DiskReader.chunk) ?? DiskReader.chunk
        var output = [Float](repeating: 0, count: capacity * outChannels)
        var handledSeek = core.flushed.load(ordering: .acquiring)
        var endReported = false
        // With a rate: SoundTouch's output on its way to the ring, and whether the file's end
        // was flushed through it (the end is written once it is drained).
        var stretched = [Float](repeating: 0, count: DiskReader.chunk * 4 * outChannels)
        var draining = false
        var tempo = 1.0
        while !core.quit.load(ordering: .acquiring) {
            // The end, once each time it is reached: said here, off the render thread.
            if core.atEnd.load(ordering: .relaxed) {
                if !endReported {
                    endReported = true
                    core.endHandler.withLock { $0 }?()
                }
            } else {
                endReported = false
            }
            let request = core.seekRequest.load(ordering: .acquiring)
            if request != handledSeek {
                // Park, wait for the render thread to empty the ring, then move. The end is
                // unsaid first: a flush must not meet the old position's end and call the
                // new one ended.
                core.endWritten.store(false, ordering: .releasing)
                core.diskParked.store(request, ordering: .releasing)
                if core.flushed.load(ordering: .acquiring) != request { usleep(1000); continue }
                sf_seek(file, core.seekTarget.load(ordering: .relaxed), SEEK_SET)
                if let stretch { csoundtouch_clear(stretch) }
                draining = false
                if let converter {
                    _ = output.withUnsafeMutableBytes { raw in
                        [raw.baseAddress!].withUnsafeBufferPointer { (try? converter.flush(into: $0.baseAddress!, capacity: capacity)) ?? 0 }
                    }
                }
                core.endWritten.store(false, ordering: .releasing)
                handledSeek = request
                continue
            }
            if core.endWritten.load(ordering: .acquiring), !core.atEnd.load(ordering: .relaxed) {
                // Loops asked for once the end was already read (it has not played yet): go on
                // from the start.
                let loops = core.loopsRemaining.load(ordering: .relaxed)
                if loops != 0 {
                    if loops > 0 { _ = core.loopsRemaining.compareExchange(expected: loops, desired: loops - 1, ordering: .relaxed) }
                    sf_seek(file, 0, SEEK_SET)
                    core.endWritten.store(false, ordering: .releasing)
                    continue
                }
            }
            if let stretch {
                // SoundTouch's output first, as the ring and the lookahead allow; the end is
                // said once the flushed tail is all in the ring.
                let room = min(jack_ringbuffer_write_space(ring) / frameBytes, lookahead - core.bufferedFrames, DiskReader.chunk * 4)
                if csoundtouch_num_samples(stretch) > 0 {
                    if room <= 0 { usleep(2000); continue }
                    let got = Int(stretched.withUnsafeMutableBufferPointer { csoundtouch_receive_samples(stretch, $0.baseAddress, UInt32(room)) })
                    _ = stretched.withUnsafeBytes { jack_ringbuffer_write(ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), got * frameBytes) }
                    continue
                }
                if draining {
                    draining = false
                    core.endWritten.store(true, ordering: .releasing)
                    continue
                }
                if core.endWritten.load(ordering: .relaxed) || room < DiskReader.chunk { usleep(2000); continue }
                let asked = Double(bitPattern: core.tempo.load(ordering: .relaxed))
                if asked != tempo {
                    tempo = asked
                    csoundtouch_set_tempo(stretch, tempo)
                    core.appliedTempo.store(tempo.bitPattern, ordering: .relaxed)
                }
            }
            if core.endWritten.load(ordering: .relaxed) || jack_ringbuffer_write_space(ring) < capacity * frameBytes {
                usleep(2000)
                continue
            }
            var frames = Int(input.withUnsafeMutableBufferPointer { sf_readf_float(file, $0.baseAddress, sf_count_t(DiskReader.chunk)) })
            var last = false
            if frames == 0 {
                let loops = core.loopsRemaining.load(ordering: .relaxed)
                if loops != 0 {
                    if loops > 0 { _ = core.loopsRemaining.compareExchange(expected: loops, desired: loops - 1, ordering: .relaxed) }
                    sf_seek(file, 0, SEEK_SET)
                    continue
                }
                last = true
            }
            var produced = frames
            if let converter {
                produced = input.withUnsafeMutableBytes { inRaw in
                    output.withUnsafeMutableBytes { outRaw in
                        [inRaw.baseAddress!].withUnsafeBufferPointer { i in
                            [outRaw.baseAddress!].withUnsafeBufferPointer { o in
                                last ? ((try? converter.flush(into: o.baseAddress!, capacity: capacity)) ?? 0)
                                     : ((try? converter.convert(i.baseAddress!, frameCount: frames, into: o.baseAddress!, capacity: capacity)) ?? 0)
                            }
                        }
                    }
                }
            } else if frames > 0 {
                output.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: input, count: frames * outChannels) }
            }
            if let stretch {
                if produced > 0 { output.withUnsafeBufferPointer { csoundtouch_put_samples(stretch, $0.baseAddress, UInt32(produced)) } }
                if last {
                    csoundtouch_flush(stretch)
                    draining = true
                }
                continue
            }
            if produced > 0 {
                _ = output.withUnsafeBytes { jack_ringbuffer_write(ring, $0.baseAddress!.assumingMemoryBound(to: CChar.self), produced * frameBytes) }
            }
            if last { core.endWritten.store(true, ordering: .releasing) }
            frames = 0
        }
    }
}

enum FilePlayerKernel {
    /// Renders one piece from the player's ring (silence before a file is open). Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let offset = piece.offset, frames = piece.frames
        let s = step.pointee
        guard let context = s.links._withUnsafeGuaranteedRef({ $0.context.load(ordering: .acquiring) }) else {
            for c in 0..<s.outputChannelCount { (s.output[c] + offset).update(repeating: 0, count: frames) }
            return
        }
        Unmanaged<PlayerCore>.fromOpaque(context)._withUnsafeGuaranteedRef {
            $0.render(s.output, channels: s.outputChannelCount, offset: offset, frames: frames)
        }
    }
}
