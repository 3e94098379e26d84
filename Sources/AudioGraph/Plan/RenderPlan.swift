// Plan: the compiled plan as the render thread reads it — steps, inputs, IO sides (trivial data only).
import Synchronization

/// Which kernel a plan step runs; the render loop dispatches with a switch (no existentials).
/// The IO unit is not a step: the render entry handles its two sides.
enum KernelKind: UInt8 {
    /// Copies input element 0 to the output (the default for a unit without a kernel of its own).
    case passthrough
    case mixer, muteGate
    /// A ``RenderCallbackUnit``: calls the application's process callback.
    case custom
    /// ``AudioFilePlayerUnit``: reads its ring (the unit's render context).
    case filePlayer
    /// ``SplitterUnit``, ``ChannelSplitterUnit``, ``MergerUnit``: channels routed between elements.
    case routing
    /// ``ConvolutionReverbUnit``: partitioned convolution (the unit's render context) and the dry/wet mix.
    case convolution
    /// ``DynamicsProcessorUnit``, ``PeakLimiterUnit``: detector, curve, gain.
    case dynamics, peakLimiter
    /// The generators: ``OscillatorUnit``, ``NoiseUnit``, ``ConstantSourceUnit``.
    case oscillator, noise, constantSource
    /// Every ``BiquadFilterUnit`` (low-pass, high-pass, band-pass, shelves, parametric EQ,
    /// notch, all-pass): one kernel, the design in the unit's state.
    case biquadFilter
    /// ``NBandEQUnit``: a cascade of up to 16 gliding biquads and a global gain.
    case nBandEQ
    /// ``DelayUnit``: an interpolated delay line with a low-pass in its feedback loop.
    case delay
    /// ``SampleDelayUnit``: a whole-frame delay line.
    case sampleDelay
    /// ``VarispeedUnit``: an input FIFO through a variable-ratio resampler (libsamplerate).
    case varispeed
    /// ``TimePitchUnit``: an input FIFO through SoundTouch (tempo) and libsamplerate (pitch).
    case timePitch
}

/// One input element as the render thread sees it. Trivial: pointers and counts only.
struct PlanInput {
    /// `[channel]` pointers to the frames the unit reads, in its processing format (its rate,
    /// `channelCount` channels), or nil when the element is unconnected (silence).
    var channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var channelCount: Int
    /// For a render-callback input: an unretained `CallbackBox` (kept alive by the plan's resources).
    var callback: UnsafeMutableRawPointer?
    var element: UInt32
    /// What the element receives before conversion: the source's output buffers, or the
    /// callback's buffers decoded to Float32. Equal to `channels` when nothing converts.
    var source: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
    var sourceRateIndex: Int
    /// A render callback in a non-canonical format fills these raw buffers (the callback
    /// format's `bufferCount` of them), decoded into `source` afterwards.
    var raw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
    var rawLayout: RawLayout
    var rawBytesPerFrame: Int
    /// Channel/rate conversion from `source` to `channels`, when the two differ, and the rate
    /// domain of `channels` (the unit's).
    var converter: UnsafeMutablePointer<PlanConverter>?
    var destinationRateIndex: Int
    /// For a ``PullingRenderCallback``: the node outputs it declared (nil for other inputs).
    var pulls: UnsafeMutablePointer<PlanPull>?
    var pullCount: Int
    /// Latency compensation: delays this input (after conversion) so it arrives aligned with
    /// the unit's slowest input; `channels` then points at its output.
    var delay: UnsafeMutablePointer<PlanDelay>?
}

/// One output element of a unit with several (a splitter's), as the render thread sees it.
/// Trivial. Element 0 lives in ``PlanStep`` itself (`output`, `ownedOutput`,
/// `outputChannelCount`), so single-output kernels never look here.
struct PlanOutput {
    /// `[channel]` pointers consumers read; reset to `owned` before the kernel runs (a kernel
    /// may point them at its input's buffers for the rest of the slice).
    var channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The element's own buffers, `maxFrames` floats (at the unit's rate) per channel.
    var owned: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var channelCount: Int
}

/// One unit's work in a cycle. Trivial: everything it points to is owned by `PlanResources`.
struct PlanStep {
    var kind: KernelKind
    /// The unit's kernel state (its typed state struct; `KernelStorage` owned by the unit).
    var state: UnsafeMutableRawPointer
    /// The unit's parameter values; while automation runs, pointed at its effective values.
    var parameters: UnsafeMutablePointer<Atomic<UInt32>>
    /// Scheduled parameter changes and ramps (owned by the unit's parameter bank).
    var automation: UnsafeMutablePointer<AutomationState>
    var inputs: UnsafeMutablePointer<PlanInput>
    var inputCount: Int
    /// Whether any input has work before the kernel reads it (a render callback, a converter,
    /// a compensation delay); most have none, and the render loop then skips them all.
    var pullsInputs: Bool
    /// `[channel]` pointers consumers read. Reset to `ownedOutput` before the kernel runs; a
    /// kernel that passes its input through unchanged may point them at its input's buffers
    /// instead of copying (valid for the rest of the slice: every producer renders before its
    /// consumers and only once).
    var output: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// The step's own buffers, `maxFrames` floats per channel.
    var ownedOutput: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var outputChannelCount: Int
    /// The unit's rate (its output format's), and that rate's index in the plan's domains.
    var sampleRate: Float
    var rateIndex: Int
    /// A custom unit's `CustomKernel` (nil for the built-in kernels).
    var custom: UnsafeMutablePointer<CustomKernel>?
    /// Output elements 1… of a unit with several (nil for one output element).
    var moreOutputs: UnsafeMutablePointer<PlanOutput>?
    var moreOutputCount: Int
    /// The unit's observers (taps, meters) and render context; the unit keeps it alive.
    var links: Unmanaged<UnitRenderLinks>
}

/// An immutable compiled graph: units in pull order with preallocated buffers for
/// `maxFrames` frames. Built on a control thread, published atomically, freed on a control thread.
struct RenderPlan {
    var steps: UnsafeMutablePointer<PlanStep>
    var stepCount: Int
    var maxFrames: Int
    var sampleRate: Double
    // IO element 1 (device input) as the graph sees it, `ioInputChannels` channels at the
    // application side's rate. Without conversion it is the `ioDevice` array itself: pointed at
    // the device's buffers each slice (read-only for every consumer), or at `ioDeviceSilence`,
    // which stays all zeros (nothing writes to it), when input is off or missing.
    var ioInput: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioInputChannels: Int
    var ioInputEnabled: Bool
    var inputCallback: UnsafeMutableRawPointer?
    // What feeds IO element 0 (device output).
    var ioOutput: PlanInput
    var ioOutputEnabled: Bool
    /// The rates units run at, and the frames each gets per slice.
    var domains: RateDomains
    /// Render notifications: unretained `CallbackBox`es (kept alive by the plan's resources).
    var notifications: UnsafeMutablePointer<UnsafeMutableRawPointer>
    var notificationCount: Int
    /// `[channel]` pointer array for the notifications' view, room for the larger device side
    /// (its entries are set each slice before the view is made).
    var notificationChannels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var notificationCapacity: Int
    /// When the IO unit's application input side differs from the device: `ioDevice` holds the
    /// device's `[channel]` pointers for the slice, converted into `ioInput`; `ioInputLayout`
    /// says which integer steps to round to; `ioInputRaw` holds the callback's encoded copy
    /// for a non-canonical application format.
    var ioDevice: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioDeviceSilence: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    var ioDeviceChannels: Int
    var ioInputConverter: UnsafeMutablePointer<PlanConverter>?
    var ioInputRateIndex: Int
    var ioInputLayout: RawLayout
    var ioInputRaw: UnsafeMutablePointer<UnsafeMutableRawPointer>?
    var ioInputRawBytesPerFrame: Int
    /// The IO unit's observers: element 1 sees the device input, element 0 what the device gets.
    var ioLinks: Unmanaged<UnitRenderLinks>
    /// `[ioDeviceChannels]` buffers of `maxFrames`: a device input channel holding NaN or ±Inf
    /// is copied here with those samples as 0, and `ioDevice` points here for the slice (the
    /// device's own buffers are never written).
    var ioDeviceClean: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    /// A ``VoiceProcessingIOUnit``'s engine (the plan's resources keep it alive), or nil: the
    /// device input goes through it before anything reads it, and what the device output got
    /// is its far end.
    var voice: Unmanaged<VoiceIOEngine>?
    /// When the plan renders its steps on several threads (``AudioGraph/renderThreads``): the
    /// steps' dependencies and the counters the threads share; nil renders them in pull order.
    var parallel: UnsafeMutablePointer<ParallelSchedule>?
}
