// Plan: the rates a plan's units run at, and the frames each gets per slice.
#if canImport(Glibc)
import Glibc
#endif

/// Frames per rate domain in the current slice, and each domain's sample time (render thread).
struct RateDomains {
    /// `[rateCount]` rates in Hz; index 0 is the graph (device) rate.
    var rates: UnsafeMutablePointer<Double>
    var rateCount: Int
    /// `[rateCount]` frames in this slice.
    var frames: UnsafeMutablePointer<Int>
    /// `[rateCount]` sample time of the slice's first frame, per domain.
    var times: UnsafeMutablePointer<Double>

    @_noLocks
    func advance(graphTime t: Double, frames n: Int) {
        frames[0] = n
        times[0] = t
        let graphRate = rates[0]
        for k in 1..<max(1, rateCount) {
            let r = rates[k]
            let start = RealTime.floor(t * r / graphRate)
            let end = RealTime.floor((t + Double(n)) * r / graphRate)
            frames[k] = Int(end - start)
            times[k] = start
        }
    }

    /// The most frames a slice of `maxFrames` at the graph rate can have at `rate`.
    static func capacity(_ maxFrames: Int, rate: Double, graphRate: Double) -> Int {
        Int((Double(maxFrames) * rate / graphRate).rounded(.up)) + 1
    }
}
