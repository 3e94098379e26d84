// Playback: AudioPlayer — the AVAudioPlayer analogue on a graph: a file player (rate with the pitch kept in its disk thread) and a one-input mixer for volume and pan.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Why an ``AudioPlayer`` could not be made.
public enum AudioPlayerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be played: libsndfile's reason (unreadable, not audio, a directory), or
    /// that it holds no frames.
    case cannotOpen(path: String, reason: String)
    /// The destination cannot be fed: ``AudioUnitError/nodeNotFound``, ``AudioUnitError/invalidElement``,
    /// ``AudioUnitError/invalidConnection`` (the element is fed already: give several players
    /// a ``MultichannelMixerUnit`` as their destination).
    case audioUnit(AudioUnitError)

    /// The error as one line: `cannot play 'PATH': REASON`, or the unit's error.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): return "cannot play '\(path)': \(reason)"
        case .audioUnit(let error): return "\(error)"
        }
    }
}

/// Plays a file into a graph the way `AVAudioPlayer` does, on an ``AudioFilePlayerUnit`` (its
/// disk thread converts the rate and, with ``enableRate``, time-stretches) and a one-input
/// ``MultichannelMixerUnit`` (volume and pan), whose output feeds a destination input element —
/// by default the ``IOUnit``'s element 0, the speaker (through the JACK driver, the playback
/// ports).
///
/// | AVAudioPlayer | here |
/// |---|---|
/// | `init(contentsOf:)` | ``init(contentsOf:graph:destination:element:)`` (any file libsndfile reads) |
/// | `prepareToPlay()` | ``prepareToPlay()``: adds the nodes to the graph and reads the first quarter second |
/// | `play()`, `play(atTime:)`, `pause()`, `stop()` | the same names (``play(atTime:)`` in ``deviceCurrentTime``'s seconds, to the frame) |
/// | `isPlaying`, `duration`, `numberOfChannels` | the same names |
/// | `currentTime` (get and set) | ``currentTime``: seconds into the file; setting it seeks |
/// | `deviceCurrentTime` | ``deviceCurrentTime``: the graph's sample time in seconds |
/// | `numberOfLoops` (−1 for ever) | ``numberOfLoops`` |
/// | `volume`, `setVolume(_:fadeDuration:)`, `pan` | ``volume``, ``setVolume(_:fadeDuration:)``, ``pan`` (the mixer's input Volume and Pan) |
/// | `enableRate`, `rate` | ``enableRate`` (before ``prepareToPlay()``), ``rate``: 0.25…4 (Apple's 0.5…2 and more), pitch kept (SoundTouch's WSOLA in the disk thread; heard within ``AudioFilePlayerUnit/rateLookahead``) |
/// | `isMeteringEnabled`, `updateMeters()`, `averagePower(forChannel:)`, `peakPower(forChannel:)` | the same names (dBFS, −160 for silence; see ``LevelMeter``), on the mixer's output |
/// | `audioPlayerDidFinishPlaying(_:successfully:)` | ``onFinish`` |
///
/// **Rates**: a file at another rate than the destination is converted by libsamplerate in the
/// player's disk thread (``AudioConverter``), so it plays at the right speed and pitch; the
/// converter is flushed at the file's end, so its last frames are heard.
///
/// **At the end** (the last loop played): playback stops, ``currentTime`` goes back to 0, the
/// loop count starts again, and ``onFinish`` is called with true — so ``play()`` plays the file
/// again from the start, as AVAudioPlayer's does.
///
/// **Bad values**: the property setters (``volume``, ``pan``, ``rate``, ``currentTime``) refuse
/// a value out of bounds or not finite: the value stays as it was and ``lastError`` says why
/// (``AudioUnitError/invalidParameter`` or ``AudioUnitError/invalidPropertyValue``); the calls
/// that return Bool return false and set ``lastError`` likewise.
///
/// The nodes stay in the graph until ``removeFromGraph()`` (or the player's deinit).
/// Thread: control thread for every call (they edit the graph and its parameters); ``onFinish``
/// runs on the player's disk thread and must not block.
/// SAFETY (`@unchecked Sendable`): state is control-thread only; the disk thread's end handler
/// touches only the unit's atomics and `EndState` (an atomic and a lock), never the player:
/// a player released while the handler runs is not deinitialized on the disk thread.
public final class AudioPlayer: @unchecked Sendable {
    /// The file played.
    public let path: String
    /// The graph the player's nodes are in.
    public let graph: AudioGraph
    /// The node the player's output feeds, and its input element.
    public let destination: AUNode
    /// The destination's input element the player feeds.
    public let destinationElement: AudioUnitElement
    /// The file's length in seconds (frames / the file's rate).
    public let duration: Double
    /// The file's channel count.
    public let numberOfChannels: Int
    /// The file's sample rate, Hz.
    public let fileSampleRate: Double
    /// Called when playback reaches the end of the file after its last loop (true), on the disk
    /// thread. Not called after ``stop()`` or ``pause()``.
    public var onFinish: (@Sendable (_ successfully: Bool) -> Void)? {
        get { end.finish.withLock { $0 } }
        set { end.finish.withLock { $0 = newValue } }
    }
    /// The error of the last call or setter that refused; cleared by the next one that succeeds.
    public private(set) var lastError: AudioUnitError?

    /// The player's nodes once prepared: the file player and the mixer whose output feeds
    /// ``destination``.
    public private(set) var nodes: (player: AUNode, mixer: AUNode)?

    /// The file player (internal: tests wait on its disk thread).
    let unit = AudioFilePlayerUnit()
    private let mixer = MultichannelMixerUnit(inputs: 1)
    private var metering: PowerMetering?
    /// What the disk thread's end handler needs: ``numberOfLoops`` and ``onFinish``.
    final class EndState: Sendable {
        let loops = Atomic<Int>(0)
        let finish = ControlLock<(@Sendable (Bool) -> Void)?>(nil)
    }
    private let end = EndState()
    private var volumeValue: Float = 1, panValue: Float = 0
    /// The destination's input format: the player's output (rate and channels) and the clock's rate.
    private let format: StreamFormat

    /// A player of `path` into `destination`'s input `element`. Nothing is added to the graph
    /// until ``prepareToPlay()`` or ``play()``.
    /// - Parameters:
    ///   - path: any file libsndfile reads (WAV, FLAC, Ogg Vorbis and Opus, MP3, AIFF…).
    ///   - graph: the graph to play in.
    ///   - destination: the node fed; nil: the graph's ``IOUnit`` (element 0, the speaker).
    ///   - element: the destination's input element (for a ``MultichannelMixerUnit`` also its
    ///     next free one, which adds it).
    /// - Throws: ``AudioPlayerError/cannotOpen(path:reason:)`` (libsndfile cannot read it, with
    ///   its reason, or it holds no frames); ``AudioPlayerError/audioUnit(_:)`` with
    ///   ``AudioUnitError/nodeNotFound`` (no such node, or no IO node when `destination` is
    ///   nil), ``AudioUnitError/invalidElement`` (no such input element),
    ///   ``AudioUnitError/invalidConnection`` (the element is fed already). The graph is unchanged.
    public init(contentsOf path: String, graph: AudioGraph, destination: AUNode? = nil,
                element: AudioUnitElement = IOUnit.outputElement) throws(AudioPlayerError) {
        do throws(AudioUnitError) {
            guard let target = destination ?? graph.nodes.first(where: { (try? graph.nodeInfo($0)) is IOUnit }) else { throw .nodeNotFound }
            let receiver = try graph.nodeInfo(target)
            let count = receiver.elementCount(.input)
            let grows = receiver.growsInputsByConnection && element == count
            guard element < count || grows, !(receiver is IOUnit) || element == IOUnit.outputElement else { throw .invalidElement }
            guard !graph.connections.contains(where: { $0.destinationNode == target && $0.destinationInputElement == element }) else {
                throw .invalidConnection
            }
            format = grows ? try receiver.streamFormat(scope: .output, element: 0) : try receiver.streamFormat(scope: .input, element: element)
            self.destination = target
        } catch {
            throw .audioUnit(error)
        }
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw .cannotOpen(path: path, reason: "it is a directory")
        }
        do throws(AudioUnitError) { try unit.open(path) } catch {
            throw .cannotOpen(path: path, reason: unit.openFailureReason ?? "\(error)")
        }
        guard let file = unit.fileFormat, file.frames > 0, file.sampleRate > 0 else {
            throw .cannotOpen(path: path, reason: "it holds no audio frames")
        }
        self.path = path
        self.graph = graph
        destinationElement = element
        duration = Double(file.frames) / file.sampleRate
        numberOfChannels = file.channels
        fileSampleRate = file.sampleRate
    }

    deinit { removeFromGraph() }

    /// Set before ``prepareToPlay()`` so that ``rate`` can change: the player's disk thread then
    /// time-stretches (SoundTouch) and keeps only ``AudioFilePlayerUnit/rateLookahead`` of audio
    /// ahead. Setting it after refuses (``lastError`` = ``AudioUnitError/initialized``).
    public var enableRate: Bool {
        get { unit.enablesRate }
        set {
            guard nodes == nil else { if newValue != unit.enablesRate { lastError = .initialized }; return }
            unit.enablesRate = newValue
        }
    }

    /// Adds the player's nodes to the graph (connected to the destination, applied with
    /// ``AudioGraph/update()``) and reads the file's first quarter second. True when ready;
    /// false with ``lastError``: ``AudioUnitError/uninitialized`` (initialize the graph first:
    /// the output format is the graph's), or a refusal of the graph edit (the graph is then as
    /// it was), or ``AudioUnitError/formatNotSupported`` (no conversion to the destination's
    /// format). Calling it again does nothing.
    @discardableResult
    public func prepareToPlay() -> Bool {
        if nodes != nil { lastError = nil; return true }
        do throws(AudioUnitError) {
            try addNodes()
            do throws(AudioUnitError) {
                try unit.prepareToPlay()  // the loop count is the unit's already (numberOfLoops sets it)
            } catch {
                removeFromGraph()  // as it was: no nodes left behind
                throw error
            }
            lastError = nil
            // SAFETY (unowned(unsafe)): the handler runs on the unit's disk thread, which the
            // unit's deinit joins before its memory goes, so the unit outlives every call — even
            // one under way while the unit is being deinitialized (where `unowned` would trap).
            unit.onEnd = { [unowned(unsafe) unit, end] in
                // The last loop has played: back to the start, ready to play again.
                unit.stop()
                try? unit.seek(toFrame: 0)
                unit.loopsRemaining = end.loops.load(ordering: .relaxed)
                end.finish.withLock { $0 }?(true)
            }
            return true
        } catch {
            lastError = error
            return false
        }
    }

    /// The nodes, their formats and connections, applied in one ``AudioGraph/update()``; on a
    /// refusal they are taken out again.
    private func addNodes() throws(AudioUnitError) {
        guard graph.isInitialized else { throw .uninitialized }
        var added: [AUNode] = []
        do throws(AudioUnitError) {
            for u in [unit, mixer] as [AudioUnit] {
                try u.setStreamFormat(format, scope: .output, element: 0)
                if u.elementCount(.input) > 0 { try u.setStreamFormat(format, scope: .input, element: 0) }
                added.append(try graph.addNode(u))
            }
            for (source, target) in zip(added, added.dropFirst()) {
                try graph.connectNodeInput(source, sourceOutputElement: 0, target, destinationInputElement: 0)
            }
            try graph.connectNodeInput(added.last!, sourceOutputElement: 0, destination, destinationInputElement: destinationElement)
            try mixer.setParameter(MultichannelMixerUnit.Parameter.volume, volumeValue, scope: .input, element: 0)
            try mixer.setParameter(MultichannelMixerUnit.Parameter.pan, panValue, scope: .input, element: 0)
            try graph.update()
        } catch {
            for node in added { try? graph.removeNode(node) }
            try? graph.update()
            throw error
        }
        nodes = (added[0], added[1])
    }

    /// Plays from ``currentTime`` (prepares first when need be). True when playing.
    @discardableResult
    public func play() -> Bool {
        guard prepareToPlay() else { return false }
        do throws(AudioUnitError) { try unit.play() } catch { lastError = error; return false }
        lastError = nil
        return true
    }

    /// Plays from ``currentTime`` starting at `time`, in ``deviceCurrentTime``'s seconds (e.g.
    /// `deviceCurrentTime + 0.5`), to the frame; a time already past starts at the next slice.
    /// True when scheduled; false with ``lastError`` = ``AudioUnitError/invalidPropertyValue``
    /// for a negative or non-finite time, or as ``prepareToPlay()``.
    @discardableResult
    public func play(atTime time: Double) -> Bool {
        guard time.isFinite, time >= 0 else { lastError = .invalidPropertyValue; return false }
        guard prepareToPlay() else { return false }
        do throws(AudioUnitError) { try unit.play(atSampleTime: time * format.sampleRate) } catch { lastError = error; return false }
        lastError = nil
        return true
    }

    /// Pauses; ``play()`` resumes where it paused. A scheduled start is cancelled.
    public func pause() { unit.stop() }

    /// Stops; ``currentTime`` stays (as AVAudioPlayer's; set it to 0 to start over).
    public func stop() { unit.stop() }

    /// Whether it is playing (or scheduled to, after ``play(atTime:)``).
    public var isPlaying: Bool { unit.isPlaying }

    /// Seconds into the file of the frame the player renders now (at the file's rate), 0…
    /// ``duration``; while looping it wraps. Setting it seeks there (the next slices play
    /// silence until the disk thread has read the new position, a few milliseconds); a value
    /// below 0, above ``duration`` or not finite is refused (``lastError`` =
    /// ``AudioUnitError/invalidPropertyValue``).
    public var currentTime: Double {
        get { unit.position / fileSampleRate }
        set {
            guard newValue.isFinite, newValue >= 0, newValue <= duration else { lastError = .invalidPropertyValue; return }
            do throws(AudioUnitError) {
                try unit.seek(toFrame: min(Int64((newValue * fileSampleRate).rounded()), unit.fileFormat?.frames ?? 0))
                lastError = nil
            } catch { lastError = error }
        }
    }

    /// The graph's time in seconds: ``AudioGraph/sampleTime`` over the destination's rate (the
    /// device's). For ``play(atTime:)``.
    public var deviceCurrentTime: Double { graph.sampleTime / format.sampleRate }

    /// How many times playback returns to the start at the end: 0 (play once, the default),
    /// n (n + 1 times in all, without a gap at the wrap), any negative value (for ever, until
    /// ``stop()``). Set while playing, it counts from the wrap to come.
    public var numberOfLoops: Int {
        get { end.loops.load(ordering: .relaxed) }
        set {
            end.loops.store(max(-1, newValue), ordering: .relaxed)
            unit.loopsRemaining = max(-1, newValue)
        }
    }

    /// Linear gain 0…1 (the mixer's input Volume; ramped over a slice, no click).
    public var volume: Float {
        get { volumeValue }
        set {
            guard newValue.isFinite, (0...1).contains(newValue) else { lastError = .invalidParameter; return }
            volumeValue = newValue
            lastError = nil
            if nodes != nil { try? mixer.setParameter(MultichannelMixerUnit.Parameter.volume, newValue, scope: .input, element: 0) }
        }
    }

    /// Goes to `volume` (0…1) along a linear ramp of `duration` seconds (0…60; 0: at once, over
    /// a slice). Refused (``lastError``) out of bounds.
    public func setVolume(_ volume: Float, fadeDuration duration: Double) {
        guard volume.isFinite, (0...1).contains(volume), duration.isFinite, duration >= 0, duration <= 60 else {
            lastError = .invalidParameter
            return
        }
        let frames = Int((duration * format.sampleRate).rounded())
        guard nodes != nil, frames >= 1 else { self.volume = volume; return }
        do throws(AudioUnitError) {
            try mixer.scheduleParameter(AudioUnitParameterEvent(id: MultichannelMixerUnit.Parameter.volume, scope: .input, element: 0,
                                                                bufferOffset: 0, .linearRamp(from: nil, to: volume, durationFrames: frames)))
            volumeValue = volume
            lastError = nil
        } catch { lastError = error }
    }

    /// Stereo position −1 (left) … 1 (right), 0 centre (the mixer's input Pan, a linear balance;
    /// with a destination that is not stereo it has no effect).
    public var pan: Float {
        get { panValue }
        set {
            guard newValue.isFinite, (-1...1).contains(newValue) else { lastError = .invalidParameter; return }
            panValue = newValue
            lastError = nil
            if nodes != nil { try? mixer.setParameter(MultichannelMixerUnit.Parameter.pan, newValue, scope: .input, element: 0) }
        }
    }

    /// Playback rate with the pitch kept, ``TimePitchUnit/rateRange`` (0.25…4; 1 normal), heard
    /// within ``AudioFilePlayerUnit/rateLookahead``; needs ``enableRate`` (else refused:
    /// ``lastError`` = ``AudioUnitError/uninitialized``); out of range: ``AudioUnitError/invalidParameter``.
    public var rate: Float {
        get { unit.rate }
        set {
            do throws(AudioUnitError) { try unit.setRate(newValue); lastError = nil } catch { lastError = error }
        }
    }

    /// Whether ``updateMeters()`` reads levels (a ``LevelMeter`` on the mixer's output while
    /// true; it needs the nodes, so setting it prepares the player).
    public var isMeteringEnabled: Bool {
        get { metering?.isEnabled ?? false }
        set {
            if newValue, metering == nil {
                guard prepareToPlay(), let nodes else { return }
                metering = PowerMetering(graph: graph, node: nodes.mixer, element: 0)
            }
            metering?.isEnabled = newValue
        }
    }

    /// Takes the meters' current readings for ``averagePower(forChannel:)`` and ``peakPower(forChannel:)``.
    public func updateMeters() { metering?.update() }

    /// The last ``updateMeters()``'s average power of `channel`, dBFS (τ = 0.3 s); −160 when
    /// metering is off, before an update, or for a channel the output lacks.
    public func averagePower(forChannel channel: Int) -> Float { metering?.averagePower(channel) ?? LevelMeter.silence }

    /// The last ``updateMeters()``'s peak power of `channel`, dBFS (held 1.5 s); −160 as above.
    public func peakPower(forChannel channel: Int) -> Float { metering?.peakPower(channel) ?? LevelMeter.silence }

    /// Frames rendered as silence because the disk thread fell behind (``AudioFilePlayerUnit/underrunFrames``).
    public var underrunFrames: UInt64 { unit.underrunFrames }

    /// Stops and takes the player's nodes out of the graph (applied with ``AudioGraph/update()``).
    /// ``prepareToPlay()`` adds them again. Calling it again does nothing.
    public func removeFromGraph() {
        unit.stop()
        unit.onEnd = nil
        metering?.remove()
        metering = nil
        guard let nodes else { return }
        for node in [nodes.player, nodes.mixer] { try? graph.removeNode(node) }
        try? graph.update()
        self.nodes = nil
    }
}
