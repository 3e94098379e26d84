// DSP: varispeed and time-pitch — a bounded input FIFO, SoundTouch's WSOLA tempo change, libsamplerate's variable-ratio resampling.
import CSampleRate
import CSoundTouch
import Synchronization

/// A bounded FIFO of interleaved frames (`[frame][channel]`) in memory it is given. Used by one
/// thread at a time (the render thread while a plan runs); never allocates.
struct InterleavedFIFO {
    var buffer: UnsafeMutablePointer<Float>
    /// Frames it holds at most.
    var capacity: Int
    var channels: Int
    /// First readable frame, and frames readable.
    var head = 0
    var count = 0

    init(buffer: UnsafeMutablePointer<Float>, capacity: Int, channels: Int) {
        self.buffer = buffer
        self.capacity = capacity
        self.channels = channels
    }

    /// Bytes of memory for `capacity` frames of `channels` channels.
    static func byteCount(channels: Int, capacity: Int) -> Int { channels * capacity * MemoryLayout<Float>.stride }

    /// Appends `frames` frames from planar `source[c][offset…]` (channels beyond `channelCount`,
    /// or a nil source, write silence). When full, drops the oldest frames to make room (the
    /// newest audio wins); returns how many frames were dropped.
    @_noLocks
    mutating func write(_ source: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, channelCount: Int,
                        offset: Int, frames: Int) -> Int {
        var n = frames, from = offset, dropped = 0
        if n > capacity { dropped = n - capacity; from += n - capacity; n = capacity }
        let over = count + n - capacity
        if over > 0 {
            head = (head + over) % capacity
            count -= over
            dropped += over
        }
        let ch = channels
        var tail = (head + count) % capacity
        for i in 0..<n {
            let dst = buffer + tail &* ch
            for c in 0..<ch {
                if let source, c < channelCount { dst[c] = source[c][from &+ i] } else { dst[c] = 0 }
            }
            tail &+= 1
            if tail == capacity { tail = 0 }
        }
        count += n
        return dropped
    }

    /// The readable frames that lie contiguously from the head (up to the buffer's end).
    @_noLocks
    func readable() -> (samples: UnsafeMutablePointer<Float>, frames: Int) {
        (buffer + head &* channels, min(count, capacity - head))
    }

    /// Drops `frames` (≤ count) frames from the head.
    @_noLocks
    mutating func consume(_ frames: Int) {
        head = (head + frames) % capacity
        count -= frames
    }
}

/// The render-thread state of ``VarispeedUnit`` and ``TimePitchUnit``: the C instances, the
/// staging buffers and the counters, followed in the same memory by the input FIFO's frames.
/// Trivial; the unit's `kernelStateRelease` frees the instances and staging.
struct TimeStretchState {
    /// Frames per staging buffer (one put, receive or resample call at most).
    static let chunk = 256

    var channels: Int
    var sampleRate: Float
    /// SoundTouch (time-pitch only; nil for varispeed): WSOLA tempo change.
    var soundTouch: OpaquePointer?
    /// libsamplerate: the varispeed's rate change, the time-pitch's pitch shift.
    var resampler: OpaquePointer
    /// `[chunk][channel]` SoundTouch's output, waiting for the resampler (time-pitch).
    var stretched: UnsafeMutablePointer<Float>
    var stretchedStart = 0
    var stretchedCount = 0
    /// `[chunk][channel]` the resampler's output before it is made planar.
    var resampled: UnsafeMutablePointer<Float>
    /// The tempo SoundTouch was last set to (time-pitch).
    var tempo: Double = 1
    /// Whether any output has come out yet (until then missing output is start-up latency, not an underrun).
    var primed = false
    /// The rate and cents parameters the last piece saw (varispeed's linking); NaN = none yet.
    var seenRate: Float = .nan
    var seenCents: Float = .nan
    /// Input frames taken before any output is rendered (time-pitch: SoundTouch's initial
    /// latency, so output starts whole and at a fixed delay whatever the slice size), and
    /// input frames taken so far (counted up to it).
    var startFrames = 0
    var taken = 0
    /// `[2]` frames of output missing (underruns) and of input dropped (backlog full); the unit reads them.
    var counters: UnsafeMutablePointer<Atomic<UInt64>>
    var fifo: InterleavedFIFO

    init(channels: Int, sampleRate: Float, soundTouch: OpaquePointer?, resampler: OpaquePointer,
         stretched: UnsafeMutablePointer<Float>, resampled: UnsafeMutablePointer<Float>,
         counters: UnsafeMutablePointer<Atomic<UInt64>>, fifo: InterleavedFIFO) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.soundTouch = soundTouch
        self.resampler = resampler
        self.stretched = stretched
        self.resampled = resampled
        self.counters = counters
        self.fifo = fifo
    }

    /// The header's size rounded up to 16 bytes; the FIFO's frames follow.
    static var headerBytes: Int { @_noLocks @inline(__always) get { (MemoryLayout<TimeStretchState>.stride + 15) / 16 * 16 } }

    /// Bytes of state for `channels` channels and a backlog of `backlogFrames` frames.
    static func byteCount(channels: Int, backlogFrames: Int) -> Int {
        headerBytes + InterleavedFIFO.byteCount(channels: channels, capacity: backlogFrames)
    }

    /// Makes the instances and staging for a fresh state at `state` (zeroed memory of
    /// ``byteCount(channels:backlogFrames:)`` bytes). With `tempoRange`, SoundTouch is created
    /// with WSOLA's overlap of `overlapMilliseconds` and warmed up over that range
    /// (``warmUp(_:channels:sampleRate:tempoRange:)``), so its buffers have grown to what any
    /// tempo in it, and any jump between two of them, needs before the render thread uses it;
    /// without, varispeed (libsamplerate only). Returns false (the state left unusable: the
    /// kernel renders silence) when a library refuses. Control thread; allocates.
    static func prepare(_ state: UnsafeMutableRawPointer, channels: Int, sampleRate: Double, backlogFrames: Int,
                        counters: UnsafeMutablePointer<Atomic<UInt64>>, overlapMilliseconds: Int,
                        tempoRange: ClosedRange<Double>?) -> Bool {
        var error: Int32 = 0
        guard channels > 0, let src = src_new(Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channels), &error) else { return false }
        var st: OpaquePointer? = nil
        if let tempoRange {
            guard let made = csoundtouch_create(UInt32(channels), UInt32(sampleRate.rounded())) else {
                src_delete(src)
                return false
            }
            _ = csoundtouch_set_setting(made, Int32(CSOUNDTOUCH_SETTING_OVERLAP_MS), Int32(overlapMilliseconds))
            warmUp(made, channels: channels, sampleRate: sampleRate, tempoRange: tempoRange)
            st = made
        }
        let start = st.map { Int(csoundtouch_get_setting($0, Int32(CSOUNDTOUCH_SETTING_INITIAL_LATENCY))) } ?? 0
        let stretched = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
        stretched.initialize(repeating: 0, count: chunk * channels)
        let resampled = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
        resampled.initialize(repeating: 0, count: chunk * channels)
        let fifoMemory = (state + headerBytes).bindMemory(to: Float.self, capacity: backlogFrames * channels)
        state.bindMemory(to: TimeStretchState.self, capacity: 1).initialize(to: TimeStretchState(
            channels: channels, sampleRate: Float(sampleRate), soundTouch: st, resampler: src,
            stretched: stretched, resampled: resampled, counters: counters,
            fifo: InterleavedFIFO(buffer: fifoMemory, capacity: backlogFrames, channels: channels)))
        state.assumingMemoryBound(to: TimeStretchState.self).pointee.startFrames = start
        return true
    }

    /// Runs zeros through SoundTouch so that its FIFOs (which grow on demand with `new[]`, in
    /// 4 kB steps, and never shrink; `clear()` keeps them) reach the largest sizes the kernel
    /// can ask of them within `tempoRange`:
    /// 1. at the top tempo, one large put: the input FIFO grows to the most input WSOLA holds
    ///    (its `sampleReq` is largest at the highest tempo) plus a put;
    /// 2. the tempo dropped to the bottom with that input still held, then one put: every
    ///    sequence the held input allows comes out at once, the most output any put can make
    ///    (held input is largest after the top tempo; each sequence consumes least at the bottom);
    /// 3. at the bottom and at 1, fed as the kernel feeds (``putFrames(tempo:)`` per put,
    ///    drained after each) for 0.1 s of input.
    /// Then cleared. Control thread; allocates.
    static func warmUp(_ st: OpaquePointer, channels: Int, sampleRate: Double, tempoRange: ClosedRange<Double>) {
        var sink = [Float](repeating: 0, count: chunk * channels)
        func drain() { while csoundtouch_receive_samples(st, &sink, UInt32(chunk)) > 0 {} }
        let top = tempoRange.upperBound, bottom = tempoRange.lowerBound
        csoundtouch_set_tempo(st, max(top, 1))
        let block = Int(max(top, 1) * 0.3 * sampleRate) + Int(0.25 * sampleRate)
        let zeros = [Float](repeating: 0, count: block * channels)
        csoundtouch_put_samples(st, zeros, UInt32(block))
        drain()
        // The most input WSOLA holds at the top tempo (just below its `sampleReq`, which
        // SoundTouch does not expose), found to within 64 frames: add 64 at a time until a
        // sequence runs; then refill to the level before that put (nothing runs).
        var level = Int(csoundtouch_num_unprocessed_samples(st))
        for _ in 0..<(block / 64) {
            let before = Int(csoundtouch_num_unprocessed_samples(st))
            csoundtouch_put_samples(st, zeros, 64)
            if csoundtouch_num_samples(st) > 0 {
                level = before
                drain()
                break
            }
        }
        let held = Int(csoundtouch_num_unprocessed_samples(st))
        if level > held { csoundtouch_put_samples(st, zeros, UInt32(level - held)) }
        drain()
        // The jump to the bottom tempo with that input held, and a put of a chunk plus the 64
        // frames of uncertainty (the kernel puts at most a chunk): every sequence runs at once.
        csoundtouch_set_tempo(st, min(bottom, 1))
        csoundtouch_put_samples(st, zeros, UInt32(chunk + 64))
        drain()
        for tempo in [min(bottom, 1), 1] {
            csoundtouch_set_tempo(st, tempo)
            let put = putFrames(tempo: tempo)
            var fed = 0
            while fed < Int(0.1 * sampleRate) {
                csoundtouch_put_samples(st, zeros, UInt32(put))
                fed += put
                drain()
            }
        }
        csoundtouch_set_tempo(st, 1)
        csoundtouch_clear(st)
    }

    /// SoundTouch's initial latency (`SETTING_INITIAL_LATENCY`, input frames) at tempo 1 for
    /// `channels` at `sampleRate`: the time-pitch's start-up hold. Control thread; allocates
    /// (a scratch instance).
    static func soundTouchInitialLatency(channels: Int, sampleRate: Double, overlapMilliseconds: Int) -> Int {
        guard let st = csoundtouch_create(UInt32(max(1, channels)), UInt32(sampleRate.rounded())) else { return 0 }
        defer { csoundtouch_destroy(st) }
        _ = csoundtouch_set_setting(st, Int32(CSOUNDTOUCH_SETTING_OVERLAP_MS), Int32(overlapMilliseconds))
        return Int(csoundtouch_get_setting(st, Int32(CSOUNDTOUCH_SETTING_INITIAL_LATENCY)))
    }

    /// Frees what ``prepare`` made (not the state memory). Control thread.
    static func release(_ state: UnsafeMutableRawPointer) {
        let s = state.assumingMemoryBound(to: TimeStretchState.self).pointee
        guard s.channels > 0 else { return }  // never prepared
        src_delete(s.resampler)
        if let st = s.soundTouch { csoundtouch_destroy(st) }
        s.stretched.deallocate()
        s.resampled.deallocate()
    }

    /// Input frames one SoundTouch put takes at `tempo`: about what a chunk of output needs, so
    /// each put triggers at most about one WSOLA sequence and SoundTouch's output never holds
    /// more than a sequence plus a chunk.
    @_noLocks @inline(__always)
    static func putFrames(tempo: Double) -> Int {
        min(chunk, max(1, Int(tempo * Double(chunk))))
    }

    /// Renders `frames` output frames into planar `output[c][offset…]`: takes what the input
    /// FIFO holds through SoundTouch at `tempo` (when there is one) and the resampler at
    /// `ratio` (output frames per input frame; libsamplerate glides from the last call's ratio
    /// across this call). Missing output is silence, counted as an underrun once output has
    /// started; before that, what came out is placed at the piece's end (start-up latency).
    /// Render thread.
    @_noLocks
    static func render(_ state: UnsafeMutablePointer<TimeStretchState>, output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>,
                       outputChannels: Int, offset: Int, frames allFrames: Int, tempo: Double, ratio: Double) {
        let ch = state.pointee.channels
        // Start-up: silence until `startFrames` input frames have been taken.
        var offset = offset, frames = allFrames
        if !state.pointee.primed && state.pointee.startFrames > 0 {
            let before = state.pointee.taken - frames
            let hold = max(0, min(frames, state.pointee.startFrames - before))
            for c in 0..<outputChannels { (output[c] + offset).update(repeating: 0, count: hold) }
            offset += hold
            frames -= hold
            if frames == 0 { return }
        }
        if let st = state.pointee.soundTouch, tempo != state.pointee.tempo {
            RealTime.soundTouchSetTempo(st, tempo)
            state.pointee.tempo = tempo
        }
        var produced = 0
        while produced < frames {
            // The resampler's input: the FIFO (varispeed) or SoundTouch's output (time-pitch).
            var source: UnsafeMutablePointer<Float>
            var available: Int
            if let st = state.pointee.soundTouch {
                if state.pointee.stretchedCount == 0 {
                    let got = RealTime.soundTouchReceive(st, state.pointee.stretched, chunk)
                    if got == 0 {
                        let (samples, ready) = state.pointee.fifo.readable()
                        if ready == 0 { break }  // input exhausted
                        let put = min(ready, putFrames(tempo: tempo))
                        RealTime.soundTouchPut(st, samples, put)
                        state.pointee.fifo.consume(put)
                        continue
                    }
                    state.pointee.stretchedStart = 0
                    state.pointee.stretchedCount = got
                }
                source = state.pointee.stretched + state.pointee.stretchedStart &* ch
                available = state.pointee.stretchedCount
            } else {
                (source, available) = state.pointee.fifo.readable()
                if available == 0 { break }
            }
            let want = min(frames - produced, chunk)
            var data = SRC_DATA(data_in: UnsafePointer(source), data_out: state.pointee.resampled,
                                input_frames: available, output_frames: want,
                                input_frames_used: 0, output_frames_gen: 0, end_of_input: 0, src_ratio: ratio)
            let status = RealTime.srcProcess(state.pointee.resampler, &data)
            let used = data.input_frames_used, generated = data.output_frames_gen
            if state.pointee.soundTouch != nil {
                state.pointee.stretchedStart += used
                state.pointee.stretchedCount -= used
            } else {
                state.pointee.fifo.consume(used)
            }
            let resampled = state.pointee.resampled
            for c in 0..<min(ch, outputChannels) {
                let dst = output[c] + (offset &+ produced)
                for i in 0..<generated { dst[i] = resampled[i &* ch &+ c] }
            }
            produced += generated
            if status != 0 || (used == 0 && generated == 0) { break }
        }
        for c in ch..<max(ch, outputChannels) { (output[c] + offset).update(repeating: 0, count: frames) }
        guard produced < frames else {
            state.pointee.primed = true
            return
        }
        let missing = frames - produced
        if state.pointee.primed {
            state.pointee.counters[0].add(UInt64(missing), ordering: .relaxed)
            for c in 0..<min(ch, outputChannels) { (output[c] + (offset &+ produced)).update(repeating: 0, count: missing) }
        } else {
            // Start-up: right-align what came out so the stream that follows is contiguous.
            for c in 0..<min(ch, outputChannels) {
                let base = output[c] + offset
                var i = produced
                while i > 0 { i -= 1; base[i &+ missing] = base[i] }
                base.update(repeating: 0, count: missing)
            }
            if produced > 0 { state.pointee.primed = true }
        }
    }

    /// Varispeed's playback rate from its two linked parameters: the cents when only they
    /// changed since the last piece (a scheduled cents event), else the rate. Render thread.
    @_noLocks
    static func linkedRate(_ state: UnsafeMutablePointer<TimeStretchState>, rate: Float, cents: Float) -> Double {
        var r = Double(rate)
        if cents != state.pointee.seenCents && rate == state.pointee.seenRate {
            r = RealTime.pow(2, Double(cents) / 1200)
        }
        state.pointee.seenRate = rate
        state.pointee.seenCents = cents
        return min(max(r, 0.25), 4)
    }

    /// Takes input frames `offset..<offset + frames` of the slice into the FIFO, counting frames
    /// dropped when the backlog is full. Render thread.
    @_noLocks
    static func take(_ state: UnsafeMutablePointer<TimeStretchState>, _ input: PlanInput, offset: Int, frames: Int) {
        let dropped = state.pointee.fifo.write(input.channels, channelCount: input.channels == nil ? 0 : input.channelCount,
                                               offset: offset, frames: frames)
        if dropped > 0 { state.pointee.counters[1].add(UInt64(dropped), ordering: .relaxed) }
        if state.pointee.taken < state.pointee.startFrames { state.pointee.taken += frames }
    }
}
