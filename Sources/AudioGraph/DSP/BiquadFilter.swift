// DSP: a biquad filter whose frequency and gain glide — parameters to a cookbook design, the design state, `[channel][frame]` buffers filtered in glide pieces.

/// How a filter's three values — frequency, shape (resonance, bandwidth or Q) and gain — become
/// an RBJ cookbook design: the response, and what the shape value means. Trivial.
struct BiquadDesign: Equatable {
    /// What the shape value means.
    enum Shape: UInt8 {
        /// Resonance in dB: Q = 10^(resonance/20)/√2, so 0 dB is Butterworth (AULowPass, AUHipass).
        case resonance
        /// Bandwidth in cents: octaves = cents/1200 (AUBandpass).
        case cents
        /// Bandwidth in octaves (AUNBandEQ).
        case octaves
        /// Q itself (AUParametricEQ).
        case q
        /// Q = 1/√2 whatever the value: Butterworth, or for a shelf the cookbook's slope S = 1.
        case butterworth
    }

    /// The arithmetic of the recursion.
    enum Precision: UInt8 {
        /// Float64 coefficients and memory (``Biquad/process64(_:_:input:output:frames:)``):
        /// every design's poles where the cookbook puts them, down to a few Hz at 192 kHz.
        case float64
        /// Float32 (``Biquad/process(_:_:input:output:frames:)``): the low-pass unit's, kept so
        /// its output stays what it has always been; below about sampleRate/5000 its response
        /// drifts from the design (see ``BiquadCoefficients64``).
        case float32
    }

    /// The cookbook filter.
    var response: BiquadResponse
    /// What the shape value means.
    var shape: Shape
    /// The recursion's arithmetic.
    var precision: Precision

    /// A design (an explicit initializer: kernels in other files may not call an implicit one
    /// under `@_noLocks`).
    @_noLocks @inline(__always)
    init(_ response: BiquadResponse, _ shape: Shape, precision: Precision = .float64) {
        self.response = response
        self.shape = shape
        self.precision = precision
    }

    /// Whether `other` is the same design (`==` without the synthesized, unchecked call).
    @_noLocks @inline(__always)
    func isSame(as other: BiquadDesign) -> Bool {
        response.isSame(as: other.response) && shape.rawValue == other.shape.rawValue && precision.rawValue == other.precision.rawValue
    }

    /// The coefficients for these values.
    /// - Parameters:
    ///   - frequency: Hz (clamped by ``BiquadCoefficients/design(_:frequency:bandwidth:gain:sampleRate:)``).
    ///   - shape: dB, cents, octaves or Q as ``shape`` says; > 0 for cents, octaves and Q.
    ///   - gain: dB (peaking and shelves).
    ///   - sampleRate: Hz, > 0.
    /// - Thread: any; real-time safe.
    @_noLocks
    func coefficients(frequency: Float, shape value: Float, gain: Float, sampleRate: Float) -> BiquadCoefficients64 {
        let bandwidth: BiquadBandwidth
        switch shape {
        case .resonance: bandwidth = .q(RealTime.pow(10, Double(value) / 20) * 0.7071067811865476)  // 1/√2
        case .cents: bandwidth = .octaves(Double(value) / 1200)
        case .octaves: bandwidth = .octaves(Double(value))
        case .q: bandwidth = .q(Double(value))
        case .butterworth: bandwidth = .q(0.7071067811865476)
        }
        return .design(response, frequency: frequency, bandwidth: bandwidth, gain: Double(gain), sampleRate: sampleRate)
    }
}

/// What a filter glides toward: the parameter values now. Trivial.
struct BiquadTarget {
    var design: BiquadDesign
    /// Hz.
    var frequency: Float
    /// As the design's shape says.
    var shape: Float
    /// dB.
    var gain: Float

    /// A target (explicit, for `@_noLocks` callers in other files).
    @_noLocks @inline(__always)
    init(design: BiquadDesign, frequency: Float, shape: Float, gain: Float) {
        self.design = design
        self.frequency = frequency
        self.shape = shape
        self.gain = gain
    }
}

/// One filter's design state: the coefficients in use and the values they were made for.
/// Trivial; zeroed memory is a valid state (nothing designed yet: the first render designs at
/// the target).
struct BiquadFilterState {
    /// In Double; a Float32 design runs them rounded to Float.
    var coefficients: BiquadCoefficients64
    /// The frequency (Hz) the coefficients were made for; glides toward the target's.
    var frequency: Float
    /// The shape value they were made for; steps to the target's.
    var shape: Float
    /// The gain (dB) they were made for; glides toward the target's.
    var gain: Float
    /// The sample rate they were made for; 0 = none yet.
    var designRate: Float
    /// The design they were made with; steps to the target's.
    var design: BiquadDesign

    /// New coefficients for these values, remembered with them.
    @_noLocks @inline(__always)
    mutating func redesign(_ design: BiquadDesign, frequency: Float, shape: Float, gain: Float, sampleRate: Float) {
        coefficients = design.coefficients(frequency: frequency, shape: shape, gain: gain, sampleRate: sampleRate)
        self.design = design
        self.frequency = frequency
        self.shape = shape
        self.gain = gain
        designRate = sampleRate
    }
}

/// A biquad whose frequency and gain glide: the low-pass unit's filter, shared by every
/// single-biquad unit and each band of the N-band EQ.
///
/// A frequency change is approached exponentially in log-frequency, τ = ``glideTime``, with
/// fresh coefficients every ``glidePiece`` frames (the usual parameter de-zippering, e.g.
/// JUCE's SmoothedValue, done in octaves); a gain change is approached the same way in dB.
/// The shape (resonance, bandwidth, Q) and the design itself step: the filter is redesigned at
/// the current frequency and gain. Scheduled immediate changes (`snaps`) jump. The memory
/// (direct form I, ``BiquadMemory``) is kept through every change.
enum BiquadFilter {
    /// Time constant of the frequency and gain glides, in seconds.
    static var glideTime: Double { @_noLocks @inline(__always) get { 0.005 } }
    /// Frames rendered with one set of coefficients while the frequency or gain glides.
    static var glidePiece: Int { @_noLocks @inline(__always) get { 32 } }

    /// Filters frames `offset..<offset + frames` of `channels` channels, gliding the design
    /// toward `target`.
    /// - Parameters:
    ///   - filter: the design state.
    ///   - memory: `[channel]` filter memory, `channels` slots of ``memoryStride`` bytes, each a
    ///     ``BiquadMemory64`` (or a ``BiquadMemory`` for a Float32 design).
    ///   - target: the parameter values now.
    ///   - sampleRate: Hz; a change redesigns at the target at once.
    ///   - snaps: start at the target instead of gliding to it (a scheduled immediate change).
    ///   - input: `[channel][frame]` source, `inputChannels` channels; nil, or channels beyond
    ///     `inputChannels`, filter silence (the filter rings out). May be `output` (in place).
    ///   - output: `[channel][frame]` destination, `channels` channels.
    ///   - frames: 0…the buffers' length − offset (0 moves only the design state).
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func render(_ filter: UnsafeMutablePointer<BiquadFilterState>, _ memory: UnsafeMutableRawPointer,
                       toward target: BiquadTarget, sampleRate: Float, snaps: Bool,
                       input: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, inputChannels: Int,
                       output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int, offset: Int, frames: Int) {
        begin(filter, toward: target, sampleRate: sampleRate, snaps: snaps)
        if !isGliding(filter, toward: target) {
            process(filter.pointee, memory, input: input, inputChannels: inputChannels,
                    output: output, channels: channels, offset: offset, frames: frames)
            return
        }
        var done = 0
        while done < frames {
            let n = advance(filter, toward: target, sampleRate: sampleRate, frames: frames - done)
            process(filter.pointee, memory, input: input, inputChannels: inputChannels,
                    output: output, channels: channels, offset: offset + done, frames: n)
            done += n
        }
    }

    /// The start of a piece: designs at the target for a new sample rate or a snap, and
    /// redesigns at the current frequency and gain when the shape or design changed.
    /// - Thread: render thread; real-time safe.
    @_noLocks @inline(__always)
    static func begin(_ filter: UnsafeMutablePointer<BiquadFilterState>, toward target: BiquadTarget, sampleRate: Float, snaps: Bool) {
        if filter.pointee.designRate != sampleRate || snaps {
            filter.pointee.redesign(target.design, frequency: target.frequency, shape: target.shape, gain: target.gain, sampleRate: sampleRate)
        } else if filter.pointee.shape != target.shape || !filter.pointee.design.isSame(as: target.design) {
            filter.pointee.redesign(target.design, frequency: filter.pointee.frequency, shape: target.shape,
                                    gain: filter.pointee.gain, sampleRate: sampleRate)
        }
    }

    /// Whether the frequency or gain is still on its way to the target.
    @_noLocks @inline(__always)
    static func isGliding(_ filter: UnsafeMutablePointer<BiquadFilterState>, toward target: BiquadTarget) -> Bool {
        filter.pointee.frequency != target.frequency || filter.pointee.gain != target.gain
    }

    /// The coefficients for the next run of at most `frames` frames: while gliding, the
    /// frequency and gain move one glide piece on (new coefficients) and the run is at most
    /// ``glidePiece`` frames. Returns the run's length, 1…frames (`frames` ≥ 1).
    /// - Thread: render thread; real-time safe.
    @_noLocks
    static func advance(_ filter: UnsafeMutablePointer<BiquadFilterState>, toward target: BiquadTarget, sampleRate: Float, frames: Int) -> Int {
        let frequency = filter.pointee.frequency, gain = filter.pointee.gain
        guard frequency != target.frequency || gain != target.gain else { return frames }
        let n = min(frames, glidePiece)
        let k = 1 - RealTime.exp(-Double(n) / (glideTime * Double(sampleRate)))
        var nextFrequency = frequency
        if frequency != target.frequency {
            let from = RealTime.log(Double(frequency)), to = RealTime.log(Double(target.frequency))
            nextFrequency = Float(RealTime.exp(from + (to - from) * k))
            if abs(nextFrequency - target.frequency) <= target.frequency * 1e-3 { nextFrequency = target.frequency }
        }
        var nextGain = gain
        if gain != target.gain {
            nextGain = Float(Double(gain) + (Double(target.gain) - Double(gain)) * k)
            if abs(nextGain - target.gain) <= 0.01 { nextGain = target.gain }
        }
        filter.pointee.redesign(target.design, frequency: nextFrequency, shape: target.shape, gain: nextGain, sampleRate: sampleRate)
        return n
    }

    /// Bytes of one channel's memory slot (a ``BiquadMemory64``, which a ``BiquadMemory`` fits in).
    static var memoryStride: Int { @_noLocks @inline(__always) get { MemoryLayout<BiquadMemory64>.stride } }

    /// Channel `c`'s memory slot as Float32 memory.
    @_noLocks @inline(__always)
    static func slot32(_ memory: UnsafeMutableRawPointer, _ c: Int) -> UnsafeMutablePointer<BiquadMemory> {
        (memory + c * memoryStride).assumingMemoryBound(to: BiquadMemory.self)
    }

    /// Channel `c`'s memory slot as Float64 memory.
    @_noLocks @inline(__always)
    static func slot64(_ memory: UnsafeMutableRawPointer, _ c: Int) -> UnsafeMutablePointer<BiquadMemory64> {
        (memory + c * memoryStride).assumingMemoryBound(to: BiquadMemory64.self)
    }

    /// The biquad over frames `offset..<offset + frames` of every channel with the filter's
    /// current coefficients, in its design's precision; channels in pairs as vector lanes
    /// (bit-identical to one at a time).
    /// - Thread: render thread; real-time safe.
    @_noLocks @inline(__always)
    static func process(_ filter: BiquadFilterState, _ memory: UnsafeMutableRawPointer,
                        input: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?, inputChannels: Int,
                        output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>, channels: Int, offset: Int, frames: Int) {
        let pairs = input != nil ? min(channels, inputChannels) / 2 : 0
        if case .float32 = filter.design.precision {
            let c = BiquadCoefficients(filter.coefficients)
            for pair in 0..<pairs {
                let first = 2 * pair
                Biquad.processPair(c, &slot32(memory, first).pointee, &slot32(memory, first + 1).pointee,
                                   inputs: (UnsafePointer(input![first] + offset), UnsafePointer(input![first + 1] + offset)),
                                   outputs: (output[first] + offset, output[first + 1] + offset), frames: frames)
            }
            for ch in (2 * pairs)..<channels {
                var source: UnsafePointer<Float>?
                if let input, ch < inputChannels { source = UnsafePointer(input[ch] + offset) }
                Biquad.process(c, &slot32(memory, ch).pointee, input: source, output: output[ch] + offset, frames: frames)
            }
        } else {
            let c = filter.coefficients
            for pair in 0..<pairs {
                let first = 2 * pair
                Biquad.processPair64(c, &slot64(memory, first).pointee, &slot64(memory, first + 1).pointee,
                                     inputs: (UnsafePointer(input![first] + offset), UnsafePointer(input![first + 1] + offset)),
                                     outputs: (output[first] + offset, output[first + 1] + offset), frames: frames)
            }
            for ch in (2 * pairs)..<channels {
                var source: UnsafePointer<Float>?
                if let input, ch < inputChannels { source = UnsafePointer(input[ch] + offset) }
                Biquad.process64(c, &slot64(memory, ch).pointee, input: source, output: output[ch] + offset, frames: frames)
            }
        }
    }
}
