// Components: the built-in units as components, under Apple's four-character codes where Apple has the unit and ours (manufacturer `AGph`) for the rest.

extension AudioComponentRegistry {
    /// Our manufacturer code for units Apple does not have: `AGph`.
    public static var ourManufacturer: FourCharCode { FourCharCode(fourCharacters: "AGph")! }

    /// A built-in component from four-character strings.
    static func builtIn(_ type: String, _ subType: String, _ manufacturer: String, _ name: String,
                        _ factory: @escaping @Sendable () throws(AudioUnitError) -> AudioUnit) -> AudioComponent {
        let description = AudioComponentDescription(componentType: FourCharCode(fourCharacters: type)!,
                                                    componentSubType: FourCharCode(fourCharacters: subType)!,
                                                    componentManufacturer: FourCharCode(fourCharacters: manufacturer)!)
        return AudioComponent(description, name: name, origin: "built-in", factory: factory)
    }

    /// The engine's own units. Apple's codes (manufacturer `appl`) where the unit stands in for
    /// Apple's: `auou/rioc` RemoteIO, `auou/vpio` VoiceProcessingIO, `aumx/mcmx` multichannel mixer, `aufx/lpas` low-pass,
    /// `augn/afpl` file player, `aufc/splt` splitter, `aufc/merg` merger, `aufx/dcmp` dynamics
    /// processor, `aufx/lmtr` peak limiter, `aufx/hpas` high-pass, `aufx/bpas` band-pass,
    /// `aufx/lshf` and `aufx/hshf` shelves, `aufx/pmeq` parametric EQ, `aufx/nbeq` N-band EQ,
    /// `aufx/dely` delay, `aufx/sdly` sample delay, `aufc/vari` varispeed, `aufc/nutp`
    /// time-pitch. Ours (`AGph`) for the mute gate (`aufx/mute`), the channel splitter
    /// (`aufc/chsp`), the convolution reverb (`aufx/conv`), the generators (`augn/osc `,
    /// `augn/nois`, `augn/cnst`), the notch (`aufx/ntch`) and the all-pass (`aufx/apas`). ``RenderCallbackUnit``
    /// needs your closure, so it is not a component (register your own with
    /// ``register(_:)``).
    public static let builtIns: [AudioComponent] = {
        [
            builtIn("auou", "rioc", "appl", "Apple: AURemoteIO") { IOUnit() },
            builtIn("auou", "vpio", "appl", "Apple: AUVoiceProcessor") { VoiceProcessingIOUnit() },
            builtIn("aumx", "mcmx", "appl", "Apple: AUMultiChannelMixer") { MultichannelMixerUnit(inputs: 1) },
            builtIn("aufx", "lpas", "appl", "Apple: AULowpass") { LowPassFilterUnit() },
            builtIn("augn", "afpl", "appl", "Apple: AUAudioFilePlayer") { AudioFilePlayerUnit() },
            builtIn("aufc", "splt", "appl", "Apple: AUSplitter") { () throws(AudioUnitError) in try SplitterUnit() },
            builtIn("aufc", "merg", "appl", "Apple: AUMerger") { () throws(AudioUnitError) in try MergerUnit() },
            builtIn("aufx", "mute", "AGph", "AudioGraph: MuteGate") { MuteGateUnit() },
            builtIn("aufc", "chsp", "AGph", "AudioGraph: ChannelSplitter") { () throws(AudioUnitError) in try ChannelSplitterUnit() },
            builtIn("aufx", "conv", "AGph", "AudioGraph: ConvolutionReverb") { ConvolutionReverbUnit() },
            builtIn("aufx", "dcmp", "appl", "Apple: AUDynamicsProcessor") { DynamicsProcessorUnit() },
            builtIn("aufx", "lmtr", "appl", "Apple: AUPeakLimiter") { PeakLimiterUnit() },
            builtIn("augn", "osc ", "AGph", "AudioGraph: Oscillator") { OscillatorUnit() },
            builtIn("augn", "nois", "AGph", "AudioGraph: Noise") { NoiseUnit() },
            builtIn("augn", "cnst", "AGph", "AudioGraph: ConstantSource") { ConstantSourceUnit() },
            builtIn("aufx", "hpas", "appl", "Apple: AUHipass") { HighPassFilterUnit() },
            builtIn("aufx", "bpas", "appl", "Apple: AUBandpass") { BandPassFilterUnit() },
            builtIn("aufx", "lshf", "appl", "Apple: AULowShelfFilter") { LowShelfFilterUnit() },
            builtIn("aufx", "hshf", "appl", "Apple: AUHighShelfFilter") { HighShelfFilterUnit() },
            builtIn("aufx", "pmeq", "appl", "Apple: AUParametricEQ") { ParametricEQUnit() },
            builtIn("aufx", "nbeq", "appl", "Apple: AUNBandEQ") { NBandEQUnit() },
            builtIn("aufx", "dely", "appl", "Apple: AUDelay") { DelayUnit() },
            builtIn("aufx", "sdly", "appl", "Apple: AUSampleDelay") { SampleDelayUnit() },
            builtIn("aufx", "ntch", "AGph", "AudioGraph: Notch") { NotchFilterUnit() },
            builtIn("aufx", "apas", "AGph", "AudioGraph: AllPass") { AllPassFilterUnit() },
            builtIn("aufc", "vari", "appl", "Apple: AUVarispeed") { VarispeedUnit() },
            builtIn("aufc", "nutp", "appl", "Apple: AUNewTimePitch") { TimePitchUnit() },
        ]
    }()
}
