// Units: the single-biquad filter units' shared base (BiquadFilterUnit) and their one kernel.

/// The base of every unit that is one RBJ cookbook biquad per channel: ``LowPassFilterUnit``,
/// ``HighPassFilterUnit``, ``BandPassFilterUnit``, ``LowShelfFilterUnit``,
/// ``HighShelfFilterUnit``, ``ParametricEQUnit``, ``NotchFilterUnit`` and ``AllPassFilterUnit``.
///
/// They share one kernel: parameter 0 is the frequency (Hz), the others the shape (resonance,
/// bandwidth or Q) and the gain, as each unit's `Parameter` enum lists them. The filter runs in
/// direct form I (``LowPassFilterUnit`` explains why), channels in pairs as vector lanes. A
/// frequency or gain change glides (exponentially, τ = 5 ms, in log-frequency and in dB, new
/// coefficients every 32 frames); a shape change takes effect at the next slice; a scheduled
/// immediate change jumps on its frame. The filter memory is kept through every change, and
/// memory below 1e-30 is set to exact zero so silence in gives exact zeros out.
///
/// Input and output have the same format (setting either sets both). You do not create this
/// class itself: create one of the units above.
/// Thread: parameters from any thread; properties from a control thread.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public class BiquadFilterUnit: AudioUnit, @unchecked Sendable {
    /// The design, and the bank slots of the shape and gain parameters (−1: none).
    let design: BiquadDesign
    let shapeSlot: Int32, gainSlot: Int32

    init(type: AudioUnitType, design: BiquadDesign, shapeSlot: Int32, gainSlot: Int32) {
        self.design = design
        self.shapeSlot = shapeSlot
        self.gainSlot = gainSlot
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: type, inputFormats: [stereo], outputFormats: [stereo])
    }

    /// Frequency parameters whose top is half the sample rate report it at the unit's current
    /// rate (never below their minimum).
    override func maxValue(of info: AudioUnitParameterInfo) -> Float {
        info.unit == .hertz && info.maxValue == Self.nyquistPlaceholder
            ? max(info.minValue, Float(currentSampleRate / 2)) : info.maxValue
    }

    /// The maximum written in a definition whose real maximum is sampleRate/2.
    static var nyquistPlaceholder: Float { 24_000 }

    override var linksInputAndOutputFormats: Bool { true }

    override var kernelKind: KernelKind { .biquadFilter }
    override func kernelStateSize(inputChannels: [Int], outputChannels: Int) -> Int {
        BiquadFilterUnitState.byteCount(channels: outputChannels)
    }
    override func prepareKernelState(_ state: UnsafeMutableRawPointer, inputCount: Int) {
        state.bindMemory(to: BiquadFilterState.self, capacity: 1)
        (state + MemoryLayout<BiquadFilterState>.stride).bindMemory(to: BiquadFilterUnitState.self, capacity: 1)
            .initialize(to: BiquadFilterUnitState(design: design, shapeSlot: shapeSlot, gainSlot: gainSlot))
    }
}

/// A single-biquad unit's kernel state: the filter's design state, then the unit's design and
/// parameter slots, then one memory slot per output channel (``BiquadFilter/memoryStride``). Trivial; the unit writes the
/// design and slots into fresh (zeroed) memory, and the rest starts zeroed (nothing designed
/// yet, silent memory).
struct BiquadFilterUnitState {
    var design: BiquadDesign
    /// Bank slots of the shape and gain values; −1 for none (the value is then 0).
    var shapeSlot: Int32
    var gainSlot: Int32

    /// Bytes for the state of a filter with `channels` channels.
    static func byteCount(channels: Int) -> Int {
        memoryOffset + channels * BiquadFilter.memoryStride
    }

    /// The unit's design and slots, after the filter's design state.
    @_noLocks @inline(__always)
    static func unit(_ state: UnsafeMutableRawPointer) -> UnsafeMutablePointer<BiquadFilterUnitState> {
        (state + MemoryLayout<BiquadFilterState>.stride).assumingMemoryBound(to: BiquadFilterUnitState.self)
    }

    /// `[channel]` filter memory slots (``BiquadFilter/memoryStride`` bytes each), after the
    /// unit's design and slots, 8-byte aligned.
    @_noLocks @inline(__always)
    static func memory(_ state: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        state + memoryOffset
    }

    /// Where the memory slots start.
    static var memoryOffset: Int {
        @_noLocks @inline(__always) get {
            (MemoryLayout<BiquadFilterState>.stride + MemoryLayout<BiquadFilterUnitState>.stride + 7) & ~7
        }
    }
}

/// The single-biquad units' kernel: reads the frequency, shape and gain and runs a
/// ``BiquadFilter`` over every channel.
enum BiquadFilterKernel {
    /// Renders one piece. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let unit = BiquadFilterUnitState.unit(s.state).pointee
        // Bank slots: the global parameters in definition order; the frequency is always slot 0.
        let shapeSlot = Int(unit.shapeSlot), gainSlot = Int(unit.gainSlot)
        let target = BiquadTarget(design: unit.design, frequency: loadParameter(s.parameters, 0),
                                  shape: shapeSlot >= 0 ? loadParameter(s.parameters, shapeSlot) : 0,
                                  gain: gainSlot >= 0 ? loadParameter(s.parameters, gainSlot) : 0)
        BiquadFilter.render(s.state.assumingMemoryBound(to: BiquadFilterState.self), BiquadFilterUnitState.memory(s.state),
                            toward: target, sampleRate: s.sampleRate, snaps: piece.snapsParameters,
                            input: s.inputs[0].channels, inputChannels: s.inputs[0].channelCount,
                            output: s.output, channels: s.outputChannelCount, offset: piece.offset, frames: piece.frames)
    }
}
