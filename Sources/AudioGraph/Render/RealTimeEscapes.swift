// Render: every call the render path makes that `@_noLocks` cannot check — each one deliberate, as the RealTimeRules article lists them.
import CJack
import CKissFFT
import CSampleRate
import CSoundTouch
#if canImport(Glibc)
import Glibc
#endif

/// The render path's escapes from the `@_noLocks` checks, one wrapper per C function or
/// callback kind, so they can be read (and audited) in one place. The list matches
/// <doc:RealTimeRules> article line for line. Everything else on the render path is compiler-checked.
///
/// Thread: the render thread (each is real-time safe for the reason its comment gives).
enum RealTime {
    // MARK: - Threads and clocks

    /// `pthread_self`: which thread is rendering, so edits from it can be refused. Reads a
    /// thread-local register; no lock.
    @_noLocks @inline(__always)
    static func threadID() -> UInt { _unsafePerformance { UInt(pthread_self()) } }

    /// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, for the CPU-load measurement: a vDSO
    /// call, no system call, no lock.
    @_noLocks @inline(__always)
    static func monotonicNanoseconds() -> UInt64 {
        var t = timespec()
        _ = _unsafePerformance { clock_gettime(CLOCK_MONOTONIC, &t) }
        return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
    }

    /// `sem_post`: wakes a render worker sleeping on its semaphore (``RenderWorkers``). glibc
    /// increments the count atomically and makes a futex wake system call only when a thread
    /// waits; it takes no lock.
    @_noLocks @inline(__always)
    static func semaphorePost(_ semaphore: UnsafeMutablePointer<sem_t>) { _ = _unsafePerformance { sem_post(semaphore) } }

    // MARK: - libm (pure arithmetic: coefficient updates, ramps, frame counts, rounding)

    /// `sin` from libm.
    @_noLocks @inline(__always) static func sin(_ x: Double) -> Double { _unsafePerformance { Glibc.sin(x) } }
    /// `cos` from libm.
    @_noLocks @inline(__always) static func cos(_ x: Double) -> Double { _unsafePerformance { Glibc.cos(x) } }
    /// `pow` from libm.
    @_noLocks @inline(__always) static func pow(_ x: Double, _ y: Double) -> Double { _unsafePerformance { Glibc.pow(x, y) } }
    /// `exp` from libm.
    @_noLocks @inline(__always) static func exp(_ x: Double) -> Double { _unsafePerformance { Glibc.exp(x) } }
    /// `log` from libm.
    @_noLocks @inline(__always) static func log(_ x: Double) -> Double { _unsafePerformance { Glibc.log(x) } }
    /// `floor` from libm.
    @_noLocks @inline(__always) static func floor(_ x: Double) -> Double { _unsafePerformance { Glibc.floor(x) } }
    /// `rint` from libm (round to nearest even, the current rounding mode).
    @_noLocks @inline(__always) static func rint(_ x: Double) -> Double { _unsafePerformance { Glibc.rint(x) } }
    /// `rintf` from libm.
    @_noLocks @inline(__always) static func rintf(_ x: Float) -> Float { _unsafePerformance { Glibc.rintf(x) } }
    /// `logf` from libm (single precision).
    @_noLocks @inline(__always) static func logf(_ x: Float) -> Float { _unsafePerformance { Glibc.logf(x) } }
    /// `expf` from libm (single precision).
    @_noLocks @inline(__always) static func expf(_ x: Float) -> Float { _unsafePerformance { Glibc.expf(x) } }

    // MARK: - libsamplerate (works in the memory src_new allocated when the plan was built)

    /// `src_process`: resamples one call's worth of frames; returns its error code (0 = none).
    @_noLocks @inline(__always)
    static func srcProcess(_ state: OpaquePointer, _ data: inout SRC_DATA) -> Int32 {
        _unsafePerformance { src_process(state, &data) }
    }

    /// `src_reset`: clears a resampler's history.
    @_noLocks @inline(__always)
    static func srcReset(_ state: OpaquePointer) { _ = _unsafePerformance { src_reset(state) } }

    // MARK: - libjack's ring buffer (lock-free single producer, single consumer; ringbuffer.h)

    /// `jack_ringbuffer_write_space`: bytes the producer may write.
    @_noLocks @inline(__always)
    static func ringWriteSpace(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>) -> Int {
        _unsafePerformance { jack_ringbuffer_write_space(ring) }
    }

    /// `jack_ringbuffer_get_write_vector`: the (up to two) free regions, without copying.
    @_noLocks @inline(__always)
    static func ringWriteVector(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>, _ vector: UnsafeMutablePointer<jack_ringbuffer_data_t>) {
        _unsafePerformance { jack_ringbuffer_get_write_vector(ring, vector) }
    }

    /// `jack_ringbuffer_write_advance`: makes `bytes` written bytes visible to the consumer.
    @_noLocks @inline(__always)
    static func ringWriteAdvance(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>, _ bytes: Int) {
        _unsafePerformance { jack_ringbuffer_write_advance(ring, bytes) }
    }

    /// `jack_ringbuffer_read_space`: bytes the consumer may read.
    @_noLocks @inline(__always)
    static func ringReadSpace(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>) -> Int {
        _unsafePerformance { jack_ringbuffer_read_space(ring) }
    }

    /// `jack_ringbuffer_get_read_vector`: the (up to two) filled regions, without copying.
    @_noLocks @inline(__always)
    static func ringReadVector(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>, _ vector: UnsafeMutablePointer<jack_ringbuffer_data_t>) {
        _unsafePerformance { jack_ringbuffer_get_read_vector(ring, vector) }
    }

    /// `jack_ringbuffer_read_advance`: releases `bytes` read bytes to the producer.
    @_noLocks @inline(__always)
    static func ringReadAdvance(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>, _ bytes: Int) {
        _unsafePerformance { jack_ringbuffer_read_advance(ring, bytes) }
    }

    // MARK: - KissFFT (works in the memory kiss_fftr_alloc allocated when the plan was made)

    /// `kiss_fftr`: the forward real FFT of `n` samples into `n/2 + 1` bins, unscaled.
    @_noLocks @inline(__always)
    static func fftForward(_ plan: OpaquePointer, _ time: UnsafePointer<Float>, _ frequency: UnsafeMutablePointer<kiss_fft_cpx>) {
        _unsafePerformance { kiss_fftr(plan, time, frequency) }
    }

    /// `kiss_fftri`: the inverse real FFT of `n/2 + 1` bins into `n` samples, unscaled (× n).
    @_noLocks @inline(__always)
    static func fftInverse(_ plan: OpaquePointer, _ frequency: UnsafePointer<kiss_fft_cpx>, _ time: UnsafeMutablePointer<Float>) {
        _unsafePerformance { kiss_fftri(plan, frequency, time) }
    }

    // MARK: - The application's callbacks (its code, under the rules for render callbacks)

    /// Calls a render callback, plain or pulling (an unretained `CallbackBox`); returns its status.
    @_noLocks @inline(__always)
    static func callRender(_ box: UnsafeMutableRawPointer, _ context: RenderCallbackContext) -> Int32 {
        _unsafePerformance {
            Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { box in
                if let render = box.render { return render(context.timeStamp, context.element, context.buffers) }
                return box.pulling?(context) ?? 0
            }
        }
    }

    /// Calls the IO unit's input callback (an unretained `CallbackBox`).
    @_noLocks @inline(__always)
    static func callInput(_ box: UnsafeMutableRawPointer, _ timeStamp: AudioTimeStamp, _ list: AudioBufferList) {
        _unsafePerformance {
            Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.input?(timeStamp, list) }
        }
    }

    /// Calls a render notification (an unretained `CallbackBox`).
    @_noLocks @inline(__always)
    static func callNotification(_ box: UnsafeMutableRawPointer, _ phase: RenderNotificationPhase,
                                 _ timeStamp: AudioTimeStamp, _ list: AudioBufferList) {
        _unsafePerformance {
            Unmanaged<CallbackBox>.fromOpaque(box)._withUnsafeGuaranteedRef { $0.notify?(phase, timeStamp, list) }
        }
    }

    /// Calls a ``RenderCallbackUnit``'s process callback (the unit unretained); counts a
    /// non-zero status in the unit's failures and returns it.
    @_noLocks @inline(__always)
    static func callProcess(_ unit: UnsafeMutableRawPointer, _ context: ProcessContext) -> Int32 {
        _unsafePerformance {
            Unmanaged<RenderCallbackUnit>.fromOpaque(unit)._withUnsafeGuaranteedRef { unit in
                let status = unit.process(context)
                if status != 0 { unit.failures.add(1, ordering: .relaxed) }
                return status
            }
        }
    }

    // MARK: - SoundTouch (through the CSoundTouch shim; measured allocation- and lock-free once
    // warmed up: TimePitchUnit's documentation gives the measurement)

    /// `csoundtouch_put_samples`: appends interleaved frames to the time-stretcher.
    @_noLocks @inline(__always)
    static func soundTouchPut(_ st: OpaquePointer, _ samples: UnsafePointer<Float>, _ frames: Int) {
        _unsafePerformance { csoundtouch_put_samples(st, samples, UInt32(frames)) }
    }

    /// `csoundtouch_receive_samples`: takes up to `frames` processed interleaved frames; returns how many.
    @_noLocks @inline(__always)
    static func soundTouchReceive(_ st: OpaquePointer, _ output: UnsafeMutablePointer<Float>, _ frames: Int) -> Int {
        _unsafePerformance { Int(csoundtouch_receive_samples(st, output, UInt32(frames))) }
    }

    /// `csoundtouch_num_samples`: processed frames ready.
    @_noLocks @inline(__always)
    static func soundTouchAvailable(_ st: OpaquePointer) -> Int {
        _unsafePerformance { Int(csoundtouch_num_samples(st)) }
    }

    /// `csoundtouch_set_tempo` (SoundTouch setTempo: recomputes WSOLA's sequence and seek
    /// lengths, no allocation; pitch is never changed on the render thread).
    @_noLocks @inline(__always)
    static func soundTouchSetTempo(_ st: OpaquePointer, _ tempo: Double) {
        _unsafePerformance { csoundtouch_set_tempo(st, tempo) }
    }

    // MARK: - Voice processing offline (the OfflineRenderer only: no deadline to miss)

    /// Runs the voice-processing IO unit's (an unretained `VoiceIOEngine`) complete 10 ms frames through WebRTC's audio
    /// processing on the rendering thread — only when the engine is `inline`, which only the
    /// ``OfflineRenderer`` makes (the library locks a mutex per frame; a live driver's engine runs
    /// it on its worker instead and the render thread only copies).
    @_noLocks @inline(__always)
    static func voiceProcessInline(_ engine: UnsafeMutableRawPointer) {
        _unsafePerformance { Unmanaged<VoiceIOEngine>.fromOpaque(engine)._withUnsafeGuaranteedRef { $0.drainInline() } }
    }
}
