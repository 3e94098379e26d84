// Render: one slice — device input, every unit in pull order, device output.
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The part of a unit's slice its kernel renders in one call: the whole slice, or (while
/// parameter automation runs) a piece of it between scheduled events. Trivial.
struct RenderPiece {
    /// First frame of the piece within the slice's buffers, 0…slice frames.
    var offset: Int
    /// Frames in the piece, 0…slice frames − offset (0: only move smoothing state).
    var frames: Int
    /// Parameter changes since the last piece are steps (scheduled immediate events): start
    /// at the new values instead of gliding to them.
    var snapsParameters: Bool
    /// The piece is the whole slice, so a kernel may pass its input's buffers on instead of
    /// copying them.
    var isWholeSlice: Bool

    /// A piece (an explicit initializer: kernels in other files may not call an implicit one
    /// under `@_noLocks`).
    @_noLocks @inline(__always)
    init(offset: Int, frames: Int, snapsParameters: Bool, isWholeSlice: Bool) {
        self.offset = offset
        self.frames = frames
        self.snapsParameters = snapsParameters
        self.isWholeSlice = isWholeSlice
    }

    /// A whole slice of `frames` frames, parameters smoothed.
    @_noLocks @inline(__always)
    static func wholeSlice(_ frames: Int) -> RenderPiece {
        RenderPiece(offset: 0, frames: frames, snapsParameters: false, isWholeSlice: true)
    }
}

/// The render loop: what happens inside one slice, hop by hop. Render thread only; every
/// function is `@_noLocks`.
///
/// 1. IO element 1: the device's buffers, read in place (or converted), the input callback,
///    the IO unit's element-1 observers.
/// 2. Each plan step in pull order: its inputs pulled (render callbacks, converters), its
///    kernel run on the slice (or in pieces, ``renderAutomated(_:frames:time:)``), its observers.
/// 3. IO element 0: what feeds it, converted to the device format, copied to the device.
enum RenderLoop {

    /// Calls the plan's render notifications with the device buffers of one slice.
    @_noLocks @inline(__always)
    static func notify(_ plan: UnsafeMutablePointer<RenderPlan>, _ phase: RenderNotificationPhase,
                       input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannelCount: Int,
                       offset: Int, frames: Int, sampleTime: Double) {
        let count = plan.pointee.notificationCount
        guard count > 0 else { return }
        let scratch = plan.pointee.notificationChannels
        let channels = min(inputChannelCount, plan.pointee.notificationCapacity)
        var list = AudioBufferList(channelPointers: UnsafePointer(scratch), channelCount: 0, frameCount: frames)
        if let input {
            for c in 0..<channels { scratch[c] = input[c] + offset }
            list = AudioBufferList(channelPointers: UnsafePointer(scratch), channelCount: channels, frameCount: frames)
        }
        let timeStamp = AudioTimeStamp(sampleTime: sampleTime)
        for i in 0..<count {
            RealTime.callNotification(plan.pointee.notifications[i], phase, timeStamp, list)
        }
    }

    /// Renders one slice of `frames` frames (≤ the plan's maxFrames) at `offset` in the
    /// device's buffers; returns the render errors counted (failed callbacks, converter glitches)
    /// and adds the non-finite samples it replaced with 0 to `nonFinite`.
    ///
    /// Non-finite samples (NaN, ±Inf) are replaced where samples enter from outside the
    /// engine's kernels — device input, render callbacks, converters, custom units and file
    /// players (``KernelKind/scrubsOutput``) — and, as the last line of defence, in what feeds
    /// the device output; each check is one pass of ``NonFinite/allFinite(_:frames:)``.
    @_noLocks
    static func renderSlice(_ plan: UnsafeMutablePointer<RenderPlan>, frames: Int, offset: Int,
                            input: UnsafePointer<UnsafeMutablePointer<Float>>?, inputChannelCount: Int,
                            output: UnsafePointer<UnsafeMutablePointer<Float>>, outputChannelCount: Int,
                            sampleTime: Double, nonFinite: inout UInt64) -> UInt64 {
        let p = plan.pointee
        var errors: UInt64 = 0
        let domains = p.domains
        domains.advance(graphTime: sampleTime, frames: frames)
        // 1. IO element 1 reads the device's buffers in place (nothing writes to them), or
        //    silence; converted to the application side's format when that differs.
        for c in 0..<p.ioDeviceChannels {
            if p.ioInputEnabled, let input, c < inputChannelCount {
                p.ioDevice[c] = input[c] + offset
                if !NonFinite.allFinite(input[c] + offset, frames: frames) {
                    // The device's buffer is not ours to write: a cleaned copy for this slice.
                    copy(input[c] + offset, to: p.ioDeviceClean[c], frames: frames)
                    nonFinite &+= NonFinite.replace(p.ioDeviceClean[c], frames: frames)
                    p.ioDevice[c] = p.ioDeviceClean[c]
                }
            } else {
                p.ioDevice[c] = p.ioDeviceSilence[c]  // all zeros: nothing writes to it
            }
        }
        if let voice = plan.pointee.voice {
            // Voice processing: element 1 is the engine's output (the device input processed,
            // its latency late); the converter, callback and observers below read that.
            voice._withUnsafeGuaranteedRef {
                $0.capture(UnsafePointer(p.ioDevice), frames: frames)
                for c in 0..<p.ioDeviceChannels { p.ioDevice[c] = $0.output[c] }
            }
        }
        let inputFrames = domains.frames[p.ioInputRateIndex]
        if let converter = p.ioInputConverter {
            errors &+= converter.pointee.render(p.ioDevice, sourceFrames: frames, destinationFrames: inputFrames)
            nonFinite &+= NonFinite.scrub(p.ioInput, channels: p.ioInputChannels, frames: inputFrames)
            SampleConversion.quantize(p.ioInput, channels: p.ioInputChannels, frames: inputFrames, kind: p.ioInputLayout.kind)
        }
        if let box = p.inputCallback {
            let timeStamp = AudioTimeStamp(sampleTime: domains.times[p.ioInputRateIndex])
            let list: AudioBufferList
            if let raw = p.ioInputRaw {
                SampleConversion.encode(p.ioInput, p.ioInputLayout, offset: 0, frames: inputFrames, into: raw)
                list = AudioBufferList(raw: raw, layout: p.ioInputLayout, bytesPerFrame: p.ioInputRawBytesPerFrame, frameCount: inputFrames)
            } else {
                list = AudioBufferList(channelPointers: UnsafePointer(p.ioInput), channelCount: p.ioInputChannels, frameCount: inputFrames)
            }
            RealTime.callInput(box, timeStamp, list)
        }
        Observers.run(p.ioLinks, element: 1, channels: p.ioInput, channelCount: p.ioInputChannels, frames: inputFrames,
                      sampleRate: domains.rates[p.ioInputRateIndex], sampleTime: domains.times[p.ioInputRateIndex])
        // 2. Units in pull order, each at its own rate: on this thread, or with the workers.
        if let schedule = plan.pointee.parallel {
            errors &+= renderWithWorkers(plan, schedule, &nonFinite)
        } else {
            for i in 0..<p.stepCount { renderStep(p.steps + i, domains, &errors, &nonFinite) }
        }
        // 3. IO element 0 to the device (converted to the device's format by its input).
        var ioOutput = p.ioOutput
        errors &+= pullInput(&ioOutput, domains, &nonFinite)
        for c in 0..<outputChannelCount {
            let dst = output[c] + offset
            if p.ioOutputEnabled, let src = ioOutput.channels, c < ioOutput.channelCount {
                // The last line of defence, whatever a kernel made: cleaned in place (an
                // output buffer of the graph; a device input buffer passed through was found
                // finite above), so the element-0 observers (a recording of the output) see
                // what the device gets. (Checking while copying, in one pass, measured slower
                // than this check and a memcpy.)
                nonFinite &+= NonFinite.scrub(src[c], frames: frames)
                copy(src[c], to: dst, frames: frames)
            } else {
                dst.update(repeating: 0, count: frames)
            }
        }
        Observers.run(p.ioLinks, element: 0, channels: p.ioOutputEnabled ? ioOutput.channels : nil,
                      channelCount: ioOutput.channels == nil ? outputChannelCount : ioOutput.channelCount,
                      frames: frames, sampleRate: p.sampleRate, sampleTime: sampleTime)
        // What the device got is the voice processing's far end for the same frames.
        if let voice = plan.pointee.voice {
            voice._withUnsafeGuaranteedRef { $0.reference(output, channels: outputChannelCount, offset: offset, frames: frames) }
        }
        return errors
    }

    /// Renders one plan step for the slice the plan's domains hold: pulls its inputs (render
    /// callbacks, converters, compensation delays), runs its kernel (in pieces while automation
    /// runs), cleans what came from outside the engine's kernels and runs its observers. Adds
    /// its render errors to `errors` and the non-finite samples it replaced to `nonFinite`.
    /// Render thread, or a render worker (``RenderWorkers``) once every step it reads is done.
    @_noLocks @inline(__always)
    static func renderStep(_ step: UnsafeMutablePointer<PlanStep>, _ domains: RateDomains,
                           _ errors: inout UInt64, _ nonFinite: inout UInt64) {
        // Most inputs are plain connections: nothing to run before the kernel reads them.
        if step.pointee.pullsInputs {
            for k in 0..<step.pointee.inputCount {
                let input = step.pointee.inputs + k
                if input.pointee.callback != nil || input.pointee.converter != nil || input.pointee.delay != nil {
                    errors &+= pullInput(input, domains, &nonFinite)
                }
            }
        }
        let n = domains.frames[step.pointee.rateIndex]
        let owned = step.pointee.ownedOutput, output = step.pointee.output
        for c in 0..<step.pointee.outputChannelCount { output[c] = owned[c] }
        if let more = step.pointee.moreOutputs {
            for e in 0..<step.pointee.moreOutputCount {
                for c in 0..<more[e].channelCount { more[e].channels[c] = more[e].owned[c] }
            }
        }
        if let custom = step.pointee.custom { custom.pointee.sliceTime = domains.times[step.pointee.rateIndex] }
        if step.pointee.automation.pointee.isIdle {
            runKernel(step, .wholeSlice(n))
        } else {
            renderAutomated(step, frames: n, time: Int64(domains.times[step.pointee.rateIndex]))
        }
        if step.pointee.kind.scrubsOutput {
            nonFinite &+= NonFinite.scrub(step.pointee.output, channels: step.pointee.outputChannelCount, frames: n)
            if let more = step.pointee.moreOutputs {
                for e in 0..<step.pointee.moreOutputCount {
                    nonFinite &+= NonFinite.scrub(more[e].channels, channels: more[e].channelCount, frames: n)
                }
            }
        }
        Observers.run(step.pointee.links, element: 0, channels: step.pointee.output, channelCount: step.pointee.outputChannelCount,
                      frames: n, sampleRate: domains.rates[step.pointee.rateIndex], sampleTime: domains.times[step.pointee.rateIndex])
        if let more = step.pointee.moreOutputs {
            for e in 0..<step.pointee.moreOutputCount {
                Observers.run(step.pointee.links, element: UInt32(e + 1), channels: more[e].channels, channelCount: more[e].channelCount,
                              frames: n, sampleRate: domains.rates[step.pointee.rateIndex], sampleTime: domains.times[step.pointee.rateIndex])
            }
        }
    }

    /// The steps of a slice on several threads (``RenderWorkers/run(_:_:nonFinite:)``). Kept out
    /// of line so the single-threaded loop in ``renderSlice`` compiles as it did without it
    /// (measured: inlined, the standard graph ran 2–5 % slower at 64 frames).
    @_noLocks @inline(never)
    static func renderWithWorkers(_ plan: UnsafeMutablePointer<RenderPlan>, _ schedule: UnsafeMutablePointer<ParallelSchedule>,
                                  _ nonFinite: inout UInt64) -> UInt64 {
        schedule.pointee.workers._withUnsafeGuaranteedRef { $0.run(plan, schedule, nonFinite: &nonFinite) }
    }

    /// One thread's part of a slice rendered with workers (``ParallelSchedule``): takes ready
    /// tasks until none is left to take, renders each one's steps, and queues the consumers it
    /// completes.
    /// `thread` is 0 for the render thread, 1… for the workers. Render thread or a render worker.
    @_noLocks
    static func takeSteps(_ plan: UnsafeMutablePointer<RenderPlan>, thread: Int) {
        guard let schedule = plan.pointee.parallel else { return }
        let s = schedule.pointee
        guard thread < s.threads else { return }
        let taskCount = s.taskCount, steps = plan.pointee.steps
        let domains = plan.pointee.domains
        var errors: UInt64 = 0, nonFinite: UInt64 = 0
        while true {
            let h = s.head.pointee.load(ordering: .relaxed)
            if h >= taskCount { break }
            if h >= s.tail.pointee.load(ordering: .acquiring) { continue }  // nothing ready yet
            guard s.head.pointee.compareExchange(expected: h, desired: h &+ 1, ordering: .relaxed).exchanged else { continue }
            var value: Int32 = 0
            repeat { value = s.ready[h].load(ordering: .acquiring) } while value == 0  // its pusher is storing it
            s.ready[h].store(0, ordering: .relaxed)
            let index = Int(value &- 1)
            for t in Int(s.taskStarts[index])..<Int(s.taskStarts[index &+ 1]) {
                renderStep(steps + Int(s.taskSteps[t]), domains, &errors, &nonFinite)
            }
            for k in Int(s.consumerStarts[index])..<Int(s.consumerStarts[index &+ 1]) {
                let consumer = Int(s.consumers[k])
                if s.pending[consumer].subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                    s.pending[consumer].store(s.producerCounts[consumer], ordering: .relaxed)
                    let slot = s.tail.pointee.add(1, ordering: .relaxed).oldValue
                    s.ready[slot].store(Int32(consumer &+ 1), ordering: .releasing)
                }
            }
            s.done.pointee.add(1, ordering: .releasing)
        }
        s.tallies[thread &* 8] = errors
        s.tallies[thread &* 8 &+ 1] = nonFinite
    }

    /// Runs a step's kernel on one piece of its slice: the one switch over kernel kinds (no
    /// existentials). Every kernel takes the step and the piece.
    @_noLocks @inline(__always)
    static func runKernel(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        switch step.pointee.kind {
        case .mixer: MixerKernel.render(step, piece)
        case .muteGate: MuteGateKernel.render(step, piece)
        case .custom: CustomKernel.render(step, piece)
        case .filePlayer: FilePlayerKernel.render(step, piece)
        case .passthrough: PassthroughKernel.render(step, piece)
        case .routing: RoutingKernel.render(step, piece)
        case .convolution: ConvolutionKernel.render(step, piece)
        case .dynamics: DynamicsKernel.render(step, piece)
        case .peakLimiter: PeakLimiterKernel.render(step, piece)
        case .oscillator: OscillatorKernel.render(step, piece)
        case .noise: NoiseKernel.render(step, piece)
        case .constantSource: ConstantSourceKernel.render(step, piece)
        case .biquadFilter: BiquadFilterKernel.render(step, piece)
        case .nBandEQ: NBandEQKernel.render(step, piece)
        case .delay: DelayKernel.render(step, piece)
        case .sampleDelay: SampleDelayKernel.render(step, piece)
        case .varispeed: VarispeedKernel.render(step, piece)
        case .timePitch: TimePitchKernel.render(step, piece)
        }
    }

    /// Prepares one input element for its unit: runs its render callback (zeroed first,
    /// silenced again if the callback fails; decoded from the callback's format), then its
    /// converter. Returns the render errors counted (failed callbacks, converter glitches);
    /// NaN and ±Inf in what the callback or the converter wrote are replaced with 0 and
    /// added to `nonFinite`.
    @_noLocks
    static func pullInput(_ input: UnsafeMutablePointer<PlanInput>, _ domains: RateDomains,
                          _ nonFinite: inout UInt64) -> UInt64 {
        var errors: UInt64 = 0
        let sourceFrames = domains.frames[input.pointee.sourceRateIndex]
        if let box = input.pointee.callback, let source = input.pointee.source {
            let timeStamp = AudioTimeStamp(sampleTime: domains.times[input.pointee.sourceRateIndex])
            let layout = input.pointee.rawLayout
            let element = input.pointee.element
            let list: AudioBufferList
            if let raw = input.pointee.raw {
                let buffers = layout.interleaved ? 1 : layout.channels
                let bytes = input.pointee.rawBytesPerFrame &* sourceFrames
                for b in 0..<buffers { raw[b].initializeMemory(as: UInt8.self, repeating: 0, count: bytes) }
                list = AudioBufferList(raw: raw, layout: layout, bytesPerFrame: input.pointee.rawBytesPerFrame, frameCount: sourceFrames)
            } else {
                zero(source, channels: layout.channels, frames: sourceFrames)
                list = AudioBufferList(channelPointers: UnsafePointer(source), channelCount: layout.channels, frameCount: sourceFrames)
            }
            let status = RealTime.callRender(box, RenderCallbackContext(timeStamp: timeStamp, element: element, buffers: list, input: input))
            if status != 0 {
                zero(source, channels: layout.channels, frames: sourceFrames)
                errors &+= 1
            } else {
                if let raw = input.pointee.raw {
                    SampleConversion.decode(raw, layout, offset: 0, frames: sourceFrames, into: source)
                }
                nonFinite &+= NonFinite.scrub(source, channels: layout.channels, frames: sourceFrames)
            }
        }
        if let converter = input.pointee.converter {
            errors &+= converter.pointee.render(input.pointee.source, sourceFrames: sourceFrames,
                                                destinationFrames: domains.frames[input.pointee.destinationRateIndex])
            nonFinite &+= NonFinite.scrub(converter.pointee.output, channels: converter.pointee.destinationChannels,
                                          frames: domains.frames[input.pointee.destinationRateIndex])
        }
        if let delay = input.pointee.delay {
            PlanDelay.render(delay, frames: domains.frames[input.pointee.destinationRateIndex])
        }
        return errors
    }
}

/// The kernel of a unit without one of its own: input element 0 copied to the output (silence
/// where the input has no channel).
enum PassthroughKernel {
    /// Copies frames `piece.offset..<piece.offset + piece.frames`. Render thread.
    @_noLocks
    static func render(_ step: UnsafeMutablePointer<PlanStep>, _ piece: RenderPiece) {
        let s = step.pointee
        let offset = piece.offset, frames = piece.frames
        for c in 0..<s.outputChannelCount {
            if let src = s.inputs[0].channels, c < s.inputs[0].channelCount { copy(src[c] + offset, to: s.output[c] + offset, frames: frames) }
            else { (s.output[c] + offset).update(repeating: 0, count: frames) }
        }
    }
}
