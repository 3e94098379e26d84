// Plan: latency compensation — delays on the faster inputs of a unit where paths of different latency meet, kept across plans.

// Where two paths from the device input meet at a unit (a mixer's inputs, a merger's) and one
// has more latency than the other (a resampled branch, a limiter's look-ahead, any unit that
// reports processing latency), the plan delays the faster inputs by the difference, rounded to
// whole frames at the unit's rate, so the paths arrive aligned — what Ardour and JUCE's
// AudioProcessorGraph do. The graph's render latency (and so the JACK ports' latency ranges)
// is then the longest path's. A delay's ring and position are kept across plans while its
// input, channel count, length and frame capacity stay the same, so re-planning (an edit
// elsewhere) never opens a gap on a path that did not change.

/// Identifies a compensation delay for reuse across plans.
struct DelayKey: Hashable {
    let node: AUNode
    let element: AudioUnitElement
    let channels: Int
    let frames: Int
    /// Frames per slice at the unit's rate the ring must also hold.
    let capacity: Int
}

/// A compensation delay's memory: a ring per channel, its write position and the delayed output.
/// Allocated on a control thread; the render thread only reads and writes the samples.
/// SAFETY (`@unchecked Sendable`): built on a control thread before a plan that uses it is published; the render thread alone touches its samples afterwards; freed after the last plan using it is reclaimed.
final class DelayStorage: @unchecked Sendable {
    let key: DelayKey
    let ring: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let writeIndex: UnsafeMutablePointer<Int>
    let ringLength: Int

    init(_ key: DelayKey) {
        self.key = key
        ringLength = key.frames + key.capacity
        ring = .allocate(capacity: key.channels)
        output = .allocate(capacity: key.channels)
        for c in 0..<key.channels {
            ring[c] = .allocate(capacity: ringLength)
            ring[c].initialize(repeating: 0, count: ringLength)
            output[c] = .allocate(capacity: key.capacity)
            output[c].initialize(repeating: 0, count: key.capacity)
        }
        writeIndex = .allocate(capacity: 1)
        writeIndex.initialize(to: 0)
    }

    deinit {
        for c in 0..<key.channels { ring[c].deallocate(); output[c].deallocate() }
        ring.deallocate()
        output.deallocate()
        writeIndex.deallocate()
    }
}

/// A compensation delay as one plan's render thread sees it. Trivial.
struct PlanDelay {
    /// `[channel]` pointers to what the input carries before the delay (read each slice:
    /// upstream units may repoint them).
    var source: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ring: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ringLength: Int
    var writeIndex: UnsafeMutablePointer<Int>
    var delay: Int
    var channels: Int

    /// Delays `frames` frames (≤ the ring's capacity) of every channel by `delay` frames: the
    /// slice goes into the ring, and what was written `delay` frames earlier comes out.
    @_noLocks
    static func render(_ d: UnsafeMutablePointer<PlanDelay>, frames: Int) {
        let p = d.pointee
        let length = p.ringLength
        let write = p.writeIndex.pointee
        let read = (write - p.delay + length) % length
        for c in 0..<p.channels {
            let ring = p.ring[c], source = p.source[c], output = p.output[c]
            var done = 0, position = write
            while done < frames {
                let n = min(frames - done, length - position)
                copy(source + done, to: ring + position, frames: n)
                done += n
                position = position + n == length ? 0 : position + n
            }
            done = 0
            position = read
            while done < frames {
                let n = min(frames - done, length - position)
                copy(ring + position, to: output + done, frames: n)
                done += n
                position = position + n == length ? 0 : position + n
            }
        }
        p.writeIndex.pointee = (write + frames) % length
    }
}
