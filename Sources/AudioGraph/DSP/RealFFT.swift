// DSP: the real FFT (KissFFT's kiss_fftr) — plans made on a control thread, transforms that allocate nothing.
import CKissFFT
#if canImport(Glibc)
import Glibc
#endif

/// A forward and an inverse real FFT of one size, from KissFFT (Mark Borgerding, BSD-3-Clause;
/// Debian's `libkissfft-dev`, float build).
///
/// `n` real samples ↔ `n/2 + 1` complex bins (`kiss_fft_cpx`, `r` and `i`; bins 0 and `n/2`
/// have no imaginary part). Neither direction scales: `inverse(forward(x)) = n · x`.
///
/// The plans (twiddle factors and KissFFT's work buffer) are allocated by `kiss_fftr_alloc`
/// when this is made, on a control thread; the transforms then run in that memory. For a power
/// of two KissFFT uses only its radix-2 and radix-4 butterflies, which need no scratch, and
/// `kiss_fftr` calls the complex transform out of place, which needs none either — so
/// ``forward(_:_:)`` and ``inverse(_:_:)`` allocate nothing and may run on the render thread
/// (the JACK tests count it). One call at a time per direction: each plan has one work buffer.
///
/// A trivial value (two plan pointers), so render code can hold it without reference
/// counting; whoever makes it calls ``destroy()`` once, when no thread uses it any more.
/// SAFETY (`@unchecked Sendable`): immutable plan pointers; callers use one plan from one thread at a time.
struct RealFFT: @unchecked Sendable {
    /// Samples per transform: a power of two, 2…65 536.
    let size: Int
    private let forwardPlan: OpaquePointer
    private let inversePlan: OpaquePointer

    /// Makes the plans for `size` samples; nil when `size` is not a power of two in 2…65 536 or
    /// KissFFT cannot allocate. Control thread; allocates.
    init?(size: Int) {
        guard size >= 2, size <= 65_536, size & (size - 1) == 0 else { return nil }
        guard let forward = kiss_fftr_alloc(Int32(size), 0, nil, nil) else { return nil }
        guard let inverse = kiss_fftr_alloc(Int32(size), 1, nil, nil) else {
            free(UnsafeMutableRawPointer(forward))
            return nil
        }
        self.size = size
        forwardPlan = forward
        inversePlan = inverse
    }

    /// Frees the plans. Control thread, once, when no thread transforms with them.
    func destroy() {
        // kiss_fftr_free is `free` (kiss_fft.h's KISS_FFT_FREE), a macro Swift cannot import.
        free(UnsafeMutableRawPointer(forwardPlan))
        free(UnsafeMutableRawPointer(inversePlan))
    }

    /// `frequency[k] = Σ time[t]·e^(−2πi·kt/n)` for `k` in `0...n/2`.
    /// - Parameters: time: `n` samples; frequency: room for `n/2 + 1` bins (not overlapping `time`).
    /// - Thread: any, one call at a time; real-time safe.
    @_noLocks @inline(__always)
    func forward(_ time: UnsafePointer<Float>, _ frequency: UnsafeMutablePointer<kiss_fft_cpx>) {
        RealTime.fftForward(forwardPlan, time, frequency)
    }

    /// `time[t] = Σ frequency[k]·e^(2πi·kt/n)` over the full Hermitian spectrum (unscaled: `n` times the true inverse).
    /// - Parameters: frequency: `n/2 + 1` bins; time: room for `n` samples (not overlapping `frequency`).
    /// - Thread: any, one call at a time; real-time safe.
    @_noLocks @inline(__always)
    func inverse(_ frequency: UnsafePointer<kiss_fft_cpx>, _ time: UnsafeMutablePointer<Float>) {
        RealTime.fftInverse(inversePlan, frequency, time)
    }
}
