// Units: the noise generator — white (PCG32, uniform) or pink (Paul Kellet's filter) — and its kernel.

/// A noise generator (no Apple or Web Audio counterpart). No input elements; one output element
/// of any channel count, every channel the same signal.
///
/// White noise is uniform on −Amplitude…Amplitude (RMS Amplitude/√3), from PCG32 (Melissa
/// O'Neill, 2014; XSH RR): the same Seed gives the same samples on every machine, from the unit's
/// first frame (or from the frame a new Seed takes effect). Pink noise is that white noise
/// through Paul Kellet's filter ("pk3", music-dsp, 1999): −3 dB per octave, the same RMS as the
/// white noise (peaks a little higher).
///
/// Color and Seed change at once (a new Seed restarts the sequence and clears the pink filter);
/// Amplitude glides like a mixer volume.
///
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public final class NoiseUnit: AudioUnit, @unchecked Sendable {
    /// Parameter IDs (global scope, element 0).
    public enum Parameter {
        /// Color: indexed, 0 white, 1 pink (``Color``), default 0.
        public static let color: AudioUnitParameterID = 0
        /// Amplitude: linear gain, 0…1, default 1: white noise peaks at ±Amplitude.
        public static let amplitude: AudioUnitParameterID = 1
        /// Seed: a whole number, 0…16,777,215, default 0: which sequence plays.
        public static let seed: AudioUnitParameterID = 2
    }

    /// The values of the Color parameter.
    public enum Color: Int, Sendable, CaseIterable {
        /// Flat spectrum: every frequency band of equal width has equal power.
        case white = 0
        /// −3 dB per octave: every octave has equal power.
        case pink = 1
    }

    /// Creates stereo white noise at full scale, seed 0.
    /// Thread: control thread.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .noise, inputFormats: [], outputFormats: [stereo])
    }

    override class var parameterDefinitions: [AudioUnitParameterInfo] {
        [AudioUnitParameterInfo(id: Parameter.color, name: "Color", unit: .indexed,
                                minValue: 0, maxValue: 1, defaultValue: 0),
         AudioUnitParameterInfo(id: Parameter.amplitude, name: "Amplitude", unit: .linearGain,
                                minValue: 0, maxValue: 1, defaultValue: 1),
         AudioUnitParameterInfo(id: Parameter.seed, name: "Seed", unit: .indexed,
                                minValue: 0, maxValue: 16_777_215, defaultValue: 0)]
    }

    override var kernelKind: KernelKind { .noise }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int { MemoryLayout<NoiseState>.stride }
}

/// The noise kernel's state. Trivial; zeroed memory is a valid state (not yet seeded).
struct NoiseState {
    var generator: PCG32
    var pink: PinkFilter
    /// The seed the generator was started with; `seeded` false before the first piece.
    var seed: Float
    var seeded: Bool
    /// Amplitude at the end of the last piece.
    var amplitude: Float
}

/// The noise generator's kernel.
enum NoiseKernel {
    /// Renders one piece into channel 0, then copies it to the others. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let state = s.state.assumingMemoryBound(to: NoiseState.self)
        let p = s.parameters
        // Bank slots: the definitions' order (0 Color, 1 Amplitude, 2 Seed).
        let pink = loadParameter(p, 0) >= 0.5
        let amplitude1 = loadParameter(p, 1)
        let seed = loadParameter(p, 2)
        var st = state.pointee
        if !st.seeded || st.seed != seed {
            st.generator = PCG32(seed: UInt64(max(0, seed)))
            st.pink = PinkFilter()
            st.seed = seed
            if !st.seeded { st.amplitude = amplitude1 }
            st.seeded = true
        }
        if piece.snapsParameters { st.amplitude = amplitude1 }
        let frames = piece.frames
        guard frames > 0, s.outputChannelCount > 0 else { state.pointee = st; return }
        let out = s.output[0] + piece.offset
        var generator = st.generator
        if pink {
            var filter = st.pink
            for f in 0..<frames { out[f] = filter.process(generator.nextSample()) }
            st.pink = filter
        } else {
            for f in 0..<frames { out[f] = generator.nextSample() }
        }
        st.generator = generator
        if st.amplitude != 1 || amplitude1 != 1 { LinearGain.scale(out, frames: frames, from: st.amplitude, to: amplitude1) }
        for c in 1..<max(1, s.outputChannelCount) { copy(out, to: s.output[c] + piece.offset, frames: frames) }
        st.amplitude = amplitude1
        state.pointee = st
    }
}
