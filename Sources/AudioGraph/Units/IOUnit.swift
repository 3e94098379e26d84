// Units: the IO unit — element 1 is the device input, element 0 the device output.

/// The device unit: the RemoteIO / HAL output analogue that connects a graph to a driver.
///
/// - Element 1 is the device input (microphone, JACK capture side): its input scope is the
///   device side (read-only, set by the driver), its output scope is what the graph receives.
/// - Element 0 is the device output (speaker, JACK playback side): its input scope is what the
///   graph delivers, its output scope is the device side (read-only).
///
/// EnableIO follows Apple's defaults: output (element 0) enabled, input (element 1) disabled —
/// enable it on input scope, element 1, before initializing. A disabled input delivers silence;
/// a disabled output delivers silence to the device.
///
/// The application sides take any valid format — another sample rate, channel count, Int16 or
/// Int32, interleaved — like RemoteIO's client formats: the graph converts between them and the
/// device (see ``AudioConverter`` for the stages; resampling adds latency, reported by
/// ``AudioGraph/renderLatency``).
/// ``VoiceProcessingIOUnit`` is the same unit with voice processing on element 1.
/// Thread: control thread, like every ``AudioUnit``.
/// SAFETY (`@unchecked Sendable`): as AudioUnit: properties on the control thread, parameters through atomics.
public class IOUnit: AudioUnit, @unchecked Sendable {
    /// The output element, feeding the device (`kOutputBus` = 0 in Apple's samples).
    public static let outputElement: AudioUnitElement = 0
    /// The input element, fed by the device (`kInputBus` = 1 in Apple's samples).
    public static let inputElement: AudioUnitElement = 1

    var inputEnabled = false
    var outputEnabled = true
    var inputCallback: InputCallback?

    /// Creates an IO unit with a stereo 48 kHz device until a driver configures it.
    public init() {
        let stereo = try! StreamFormat.float32(sampleRate: 48_000, channels: 2)
        super.init(type: .io, inputFormats: [stereo, stereo], outputFormats: [stereo, stereo])
    }

    override func isDeviceSide(_ scope: AudioUnitScope, _ element: AudioUnitElement) -> Bool {
        (scope == .input && element == IOUnit.inputElement) || (scope == .output && element == IOUnit.outputElement)
    }

    /// Both application sides take any valid format (the graph converts to and from the device's).
    override func checkFormat(_ format: StreamFormat, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) {}

    /// The device's input format (input scope, element 1): what the driver captures.
    public var deviceInputFormat: StreamFormat { inputFormats[1] }
    /// The device's output format (output scope, element 0): what the driver plays.
    public var deviceOutputFormat: StreamFormat { outputFormats[0] }

    /// Sets the device-side formats; for drivers, before the graph initializes.
    ///
    /// Application-side formats the app never set follow: same channel count and sample rate.
    /// - Parameters:
    ///   - inputChannels: capture channels, 1…64.
    ///   - outputChannels: playback channels, 1…64.
    ///   - sampleRate: the device rate in Hz.
    /// - Throws: ``AudioUnitError/formatNotSupported`` for counts or rate out of bounds,
    ///   ``AudioUnitError/initialized`` while the unit is initialized.
    /// - Thread: control thread.
    public func configureDevice(inputChannels: UInt32, outputChannels: UInt32, sampleRate: Double) throws(AudioUnitError) {
        let input = try StreamFormat.float32(sampleRate: sampleRate, channels: inputChannels)
        let output = try StreamFormat.float32(sampleRate: sampleRate, channels: outputChannels)
        if input == inputFormats[1] && output == outputFormats[0] { return }
        guard !isInitialized else { throw .initialized }
        inputFormats[1] = input
        outputFormats[0] = output
        if !explicitFormats.contains(FormatKey(scope: .output, element: 1)) { outputFormats[1] = input }
        if !explicitFormats.contains(FormatKey(scope: .input, element: 0)) { inputFormats[0] = output }
    }

    override func getUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> AudioUnitPropertyValue {
        switch id {
        case .enableIO:
            let flag = try enableIOFlag(scope: scope, element: element)
            return .uint32(flag ? 1 : 0)
        case .setInputCallback:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            return .inputCallback(inputCallback)
        default:
            throw .invalidProperty
        }
    }

    private func enableIOFlag(scope: AudioUnitScope, element: AudioUnitElement) throws(AudioUnitError) -> Bool {
        guard scope != .global else { throw .invalidScope }
        try checkElement(scope, element)
        if scope == .input && element == IOUnit.inputElement { return inputEnabled }
        if scope == .output && element == IOUnit.outputElement { return outputEnabled }
        throw .invalidElement
    }

    override func setUnitProperty(_ id: AudioUnitPropertyID, scope: AudioUnitScope, element: AudioUnitElement, _ value: AudioUnitPropertyValue) throws(AudioUnitError) {
        switch id {
        case .enableIO:
            let current = try enableIOFlag(scope: scope, element: element)
            guard case .uint32(let flag) = value, flag <= 1 else { throw .invalidPropertyValue }
            if current == (flag == 1) { return }
            guard !isInitialized else { throw .initialized }
            if scope == .input { inputEnabled = flag == 1 } else { outputEnabled = flag == 1 }
        case .setInputCallback:
            guard scope == .global else { throw .invalidScope }
            try checkElement(scope, element)
            guard case .inputCallback(let callback) = value else { throw .invalidPropertyValue }
            guard !isInitialized else { throw .initialized }
            inputCallback = callback
        default:
            throw .invalidProperty
        }
    }

    /// Enables or disables device input (element 1) or output (element 0). Typed form of EnableIO.
    /// - Throws: ``AudioUnitError/initialized`` while initialized (unless unchanged).
    /// - Thread: control thread.
    public func setInputEnabled(_ enabled: Bool) throws(AudioUnitError) {
        try setProperty(.enableIO, scope: .input, element: IOUnit.inputElement, .uint32(enabled ? 1 : 0))
    }

}
