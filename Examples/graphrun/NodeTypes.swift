// graphrun: the unit types a graph file can name — each type's shape fields (fixed when the unit is made), element counts and factory; `graphrun --list` prints them.
import AudioGraph
import AudioGraphPlugins

/// A value of a shape field, as read from the file.
enum ShapeValue: Equatable, CustomStringConvertible {
    case int(Int)
    case ints([Int])
    case text(String)

    var description: String {
        switch self {
        case .int(let n): return String(n)
        case .ints(let list): return "[" + list.map(String.init).joined(separator: ", ") + "]"
        case .text(let s): return "\"\(s)\""
        }
    }
}

/// A node's shape: the fields that decide which unit is made (element counts, channels, an
/// impulse-response file). Changing one replaces the unit; parameters change in place.
typealias Shape = [String: ShapeValue]

/// One shape field a node type takes.
struct ShapeField {
    enum Kind {
        /// An integer in a range, with a default.
        case count(ClosedRange<Int>, default: Int)
        /// `"format": {"channels": N}`: the output's channels (1…64), default the file's `channels`.
        case format
        /// An array of channel counts (1…64 each), with a default.
        case counts(default: [Int])
        /// A file path (required).
        case file
        /// One of some names, with a default.
        case choice([String], default: String)
        /// A string (a plugin URI, label or library), required or not.
        case text(required: Bool)
    }
    let name: String
    let kind: Kind
    /// One line for `--list`.
    let help: String
}

/// Why a node's unit could not be made: the shape field at fault (nil: the node as a whole) and why.
struct NodeTypeError: Error {
    let field: String?
    let message: String
}

/// A unit type a graph file can name.
enum NodeType: String, CaseIterable {
    case lowpass, mutegate, mixer, splitter, channelsplitter, merger, convolver
    case dynamics, limiter, oscillator, noise, constant
    case highpass, bandpass, notch, allpass, lowshelf, highshelf, parametriceq, nbandeq, delay, sampledelay
    case varispeed, timepitch
    case lv2, ladspa

    /// One line for `--list`: what it is and which Apple / Web Audio unit it mirrors.
    var summary: String {
        switch self {
        case .lowpass: return "second-order low-pass filter (kAudioUnitSubType_LowPassFilter)"
        case .mutegate: return "click-free mute (ours)"
        case .mixer: return "multichannel mixer (kAudioUnitSubType_MultiChannelMixer): inputs summed with volume and pan"
        case .splitter: return "one input copied to several outputs (kAudioUnitSubType_Splitter)"
        case .channelsplitter: return "each input channel to its own mono output (Web Audio ChannelSplitterNode)"
        case .merger: return "inputs' channels side by side in one output (kAudioUnitSubType_Merger, Web Audio ChannelMergerNode)"
        case .convolver: return "convolution reverb with an impulse response from a file (Web Audio ConvolverNode)"
        case .dynamics: return "compressor/expander (kAudioUnitSubType_DynamicsProcessor); its meters are read-only"
        case .limiter: return "look-ahead peak limiter (kAudioUnitSubType_PeakLimiter); 30 ms of latency, compensated"
        case .oscillator: return "band-limited oscillator, no input (Web Audio OscillatorNode); waveform: sine | square | sawtooth | triangle"
        case .noise: return "white or pink noise, no input (ours); color: white | pink"
        case .constant: return "a constant value, no input (Web Audio ConstantSourceNode)"
        case .highpass: return "second-order high-pass filter (kAudioUnitSubType_HighPassFilter)"
        case .bandpass: return "band-pass filter, 0 dB at the centre (kAudioUnitSubType_BandPassFilter)"
        case .notch: return "notch (band-stop) filter, silence at the centre (ours; Web Audio BiquadFilterNode \"notch\")"
        case .allpass: return "all-pass filter: unity gain, phase turning around the centre (ours; Web Audio \"allpass\")"
        case .lowshelf: return "low-shelf filter (kAudioUnitSubType_LowShelfFilter)"
        case .highshelf: return "high-shelf filter (kAudioUnitSubType_HighShelfFilter)"
        case .parametriceq: return "one peaking band (kAudioUnitSubType_ParametricEQ)"
        case .nbandeq: return "up to 16 bands, each bypassed until \"bypassBandN\": false (kAudioUnitSubType_NBandEQ); filterTypeN by name"
        case .delay: return "delay up to 2 s with feedback through a low-pass, wet/dry mix (kAudioUnitSubType_Delay)"
        case .sampledelay: return "delay by whole frames, dry only (kAudioUnitSubType_SampleDelay)"
        case .varispeed: return "playback rate, pitch following, through libsamplerate (kAudioUnitSubType_Varispeed); live input: rate < 1 builds a backlog, > 1 runs short"
        case .timepitch: return "rate and pitch apart, SoundTouch WSOLA + libsamplerate (kAudioUnitSubType_NewTimePitch); 91.7 ms of latency at 48 kHz, compensated"
        case .lv2: return "an installed LV2 plugin (graphrun --list TEXT finds them, --info URI shows its parameters by port symbol)"
        case .ladspa: return "a LADSPA plugin from LADSPA_PATH (graphrun --list TEXT finds them, --info LABEL shows its parameters by port symbol)"
        }
    }

    /// The shape fields the type takes.
    var fields: [ShapeField] {
        switch self {
        case .lowpass, .mutegate, .dynamics, .limiter: return []
        case .highpass, .bandpass, .notch, .allpass, .lowshelf, .highshelf, .parametriceq, .delay, .sampledelay: return []
        case .varispeed, .timepitch: return []
        case .nbandeq:
            return [ShapeField(name: "bands", kind: .count(1...NBandEQUnit.maximumNumberOfBands, default: NBandEQUnit.maximumNumberOfBands),
                               help: "bands, numbered 0…bands−1 in parameter names (frequency0, gain0, …)")]
        case .oscillator, .noise, .constant:
            return [ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: the output's channels (all the same signal)")]
        case .mixer:
            return [ShapeField(name: "inputs", kind: .count(1...1024, default: 1), help: "input elements"),
                    ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: the output's channels")]
        case .splitter:
            return [ShapeField(name: "outputs", kind: .count(1...64, default: 2), help: "output elements, each a copy of the input"),
                    ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: the input's and every output's channels")]
        case .channelsplitter:
            return [ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: the input's channels = the mono outputs")]
        case .merger:
            return [ShapeField(name: "inputChannels", kind: .counts(default: [1, 1]), help: "each input element's channels, 64 in all at most")]
        case .convolver:
            return [ShapeField(name: "impulseResponse", kind: .file,
                               help: "the impulse response: any file libsndfile reads, ≤ 10 s, resampled to the server's rate; relative to the graph file's folder")]
        case .lv2:
            return [ShapeField(name: "uri", kind: .text(required: true), help: "the plugin's URI, e.g. http://plugin.org.uk/swh-plugins/amp"),
                    ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: a multiple of the plugin's audio outputs (a mono plugin runs once per channel)")]
        case .ladspa:
            return [ShapeField(name: "label", kind: .text(required: false), help: "the plugin's label, e.g. amp_mono (this or \"id\")"),
                    ShapeField(name: "uniqueID", kind: .count(1...Int(Int32.max), default: 0), help: "the plugin's unique ID, e.g. 1048 (this or \"label\"; \"id\" is the node's name)"),
                    ShapeField(name: "library", kind: .text(required: false), help: "the library, a path or a file name in LADSPA_PATH, e.g. amp.so (default: every library)"),
                    ShapeField(name: "format", kind: .format, help: "{\"channels\": N}: a multiple of the plugin's audio outputs (a mono plugin runs once per channel)")]
        }
    }

    /// Input elements a node of this shape has.
    func inputCount(_ shape: Shape) -> Int {
        switch self {
        case .mixer: return shape.int("inputs") ?? 1
        case .merger: return shape.ints("inputChannels")?.count ?? 2
        case .oscillator, .noise, .constant: return 0
        case .lv2, .ladspa: return ((try? pluginInfo(shape))?.audioInputs.isEmpty ?? false) ? 0 : 1
        default: return 1
        }
    }

    /// The plugin a `lv2` or `ladspa` node names.
    /// - Throws: ``NodeTypeError`` naming the field at fault and the near matches.
    func pluginInfo(_ shape: Shape) throws(NodeTypeError) -> PluginInfo {
        do {
            switch self {
            case .lv2:
                return try LV2.find(uri: shape.text("uri") ?? "")
            default:
                let label = shape.text("label") ?? shape.int("uniqueID").map(String.init)
                guard let label else { throw NodeTypeError(field: "label", message: "a ladspa node needs \"label\" or \"uniqueID\"") }
                return try LADSPA.find(label: label, library: shape.text("library"))
            }
        } catch let error as PluginError {
            switch error {
            case .unknownURI: throw NodeTypeError(field: "uri", message: "\(error)")
            case .unknownLabel: throw NodeTypeError(field: shape.text("label") == nil ? "uniqueID" : "label", message: "\(error)")
            case .notALADSPALibrary: throw NodeTypeError(field: "library", message: "\(error)")
            default: throw NodeTypeError(field: nil, message: "\(error)")
            }
        } catch let error as NodeTypeError {
            throw error
        } catch {
            throw NodeTypeError(field: nil, message: "\(error)")
        }
    }

    /// Output elements a node of this shape has (with `fileChannels` for a default format).
    func outputCount(_ shape: Shape, fileChannels: Int) -> Int {
        switch self {
        case .splitter: return shape.int("outputs") ?? 2
        case .channelsplitter: return shape.int("format") ?? fileChannels
        default: return 1
        }
    }

    /// A new, detached unit of this type and shape at `sampleRate`.
    /// - Throws: ``NodeTypeError`` naming the field the unit refused (an impulse response that
    ///   cannot be read), or none when it refused the shape as a whole.
    func makeUnit(_ shape: Shape = [:], fileChannels: Int = 2, sampleRate: Double = 48_000) throws(NodeTypeError) -> AudioUnit {
        do { return try makeUnit(shape, channels: shape.int("format") ?? fileChannels, sampleRate: sampleRate) } catch let error as NodeTypeError {
            throw error
        } catch {
            throw NodeTypeError(field: nil, message: "\(error)")
        }
    }

    private func makeUnit(_ shape: Shape, channels: Int, sampleRate: Double) throws -> AudioUnit {
        let unit: AudioUnit
        switch self {
        case .lowpass: unit = LowPassFilterUnit()
        case .mutegate: unit = MuteGateUnit()
        case .mixer: unit = MultichannelMixerUnit(inputs: shape.int("inputs") ?? 1)
        case .splitter: unit = try SplitterUnit(outputs: shape.int("outputs") ?? 2, channels: channels)
        case .channelsplitter: unit = try ChannelSplitterUnit(channels: channels)
        case .merger: unit = try MergerUnit(inputChannels: shape.ints("inputChannels") ?? [1, 1])
        case .convolver:
            let convolver = ConvolutionReverbUnit()
            if let path = shape.text("impulseResponse") {
                try convolver.setStreamFormat(try .float32(sampleRate: sampleRate, channels: UInt32(channels)), scope: .output, element: 0)
                do { try convolver.loadImpulseResponse(contentsOf: path) } catch {
                    throw NodeTypeError(field: "impulseResponse", message: "\(error)")
                }
            }
            unit = convolver
        case .dynamics: unit = DynamicsProcessorUnit()
        case .limiter: unit = PeakLimiterUnit()
        case .oscillator: unit = OscillatorUnit()
        case .noise: unit = NoiseUnit()
        case .constant: unit = ConstantSourceUnit()
        case .highpass: unit = HighPassFilterUnit()
        case .bandpass: unit = BandPassFilterUnit()
        case .notch: unit = NotchFilterUnit()
        case .allpass: unit = AllPassFilterUnit()
        case .lowshelf: unit = LowShelfFilterUnit()
        case .highshelf: unit = HighShelfFilterUnit()
        case .parametriceq: unit = ParametricEQUnit()
        case .nbandeq: unit = NBandEQUnit(bands: shape.int("bands") ?? NBandEQUnit.maximumNumberOfBands)
        case .delay: unit = DelayUnit()
        case .sampledelay: unit = SampleDelayUnit()
        case .varispeed: unit = VarispeedUnit()
        case .timepitch: unit = TimePitchUnit()
        case .lv2, .ladspa:
            let info = try pluginInfo(shape)
            let outs = max(1, info.audioOutputs.count)
            let count = shape.int("format") == nil && channels % outs != 0 ? outs : channels
            do {
                let plugin = try PluginUnit(info, channels: count)
                try plugin.setStreamFormat(try .float32(sampleRate: sampleRate, channels: UInt32(count)), scope: .output, element: 0)
                return plugin
            } catch let error as PluginError {
                if case .channelCount = error { throw NodeTypeError(field: "format", message: "\(error)") }
                throw NodeTypeError(field: nil, message: "\(error)")
            }
        }
        // Output formats at the server's rate (a mixer's with the file's channels); the others follow their input.
        let outputChannels = [.mixer, .convolver, .oscillator, .noise, .constant].contains(self)
            ? channels : Int((try unit.streamFormat(scope: .output, element: 0)).channelsPerFrame)
        if [.mixer, .splitter, .channelsplitter, .merger, .convolver, .oscillator, .noise, .constant].contains(self) {
            try unit.setStreamFormat(try .float32(sampleRate: sampleRate, channels: UInt32(outputChannels)), scope: .output, element: 0)
        }
        return unit
    }

    /// Names a file may give instead of numbers for an indexed parameter (by the parameter's
    /// file name), in value order: `"waveform": "sawtooth"` is 2.
    var valueNames: [String: [String]] {
        switch self {
        case .oscillator: return ["waveform": OscillatorUnit.Waveform.allCases.map { "\($0)" }]
        case .noise: return ["color": NoiseUnit.Color.allCases.map { "\($0)" }]
        case .nbandeq:
            let names = NBandEQUnit.FilterType.allCases.map { "\($0)" }
            return Dictionary(uniqueKeysWithValues: (0..<NBandEQUnit.maximumNumberOfBands).map { ("filterType\($0)", names) })
        default: return [:]
        }
    }

    /// `graphrun --list`: every type, its shape fields and its parameters (name, unit, range,
    /// default at 48 kHz), as a file names them.
    static func listing(matching text: String? = nil) -> String {
        var lines = ["node types (\"type\" in a graph file); parameters as \"parameters\": {name: value}, ranges at 48000 Hz:"]
        let needle = text?.lowercased()
        for type in allCases where needle == nil || type.rawValue.contains(needle!) || type.summary.lowercased().contains(needle!) {
            lines.append("")
            lines.append("\(type.rawValue): \(type.summary)")
            for field in type.fields { lines.append("  \"\(field.name)\": \(field.help) \(field.defaultDescription)") }
            guard let unit = try? type.makeUnit() else { continue }
            let table = ParameterTable(of: unit)
            // Numbered parameters (an EQ's frequency0…frequency15) print once, as frequencyN.
            var printed = Set<String>()
            for (name, info) in table.node.sorted(by: { $0.value.id < $1.value.id }) {
                let stem = String(name.reversed().drop(while: \.isNumber).reversed())
                let count = stem == name ? 0 : table.node.keys.filter { $0.hasPrefix(stem) && $0.dropFirst(stem.count).allSatisfy(\.isNumber) }.count
                if count > 1, !printed.insert(stem).inserted { continue }
                var line = "  parameter \(count > 1 ? "\(stem)N, N = 0…\(count - 1)" : name): \(ParameterTable.describe(info))"
                if let names = type.valueNames[name] { line += "; by name: " + names.joined(separator: " | ") }
                lines.append(line)
            }
            for (name, info) in table.input.sorted(by: { $0.value.id < $1.value.id }) {
                lines.append("  input parameter \(name) (\"inputParameters\": [{…} per input]): \(ParameterTable.describe(info))")
            }
        }
        let typesMatched = lines.count > 1
        lines.append("")
        lines.append("plugins (\"type\": \"lv2\" with \"uri\", or \"ladspa\" with \"label\", and \"library\" where two libraries share a label; graphrun --info NAME for parameters):")
        var pluginsListed = 0, unhostable = 0
        for info in LV2.scan() + LADSPA.scan() {
            let line = info.standard == .lv2
                ? "lv2 \(info.identifier) \"\(info.name)\" {\"type\": \"lv2\", \"uri\": \"\(info.identifier)\"}"
                : "ladspa \(info.label) (\(info.uniqueID)) \"\(info.name)\" {\"type\": \"ladspa\", \"label\": \"\(info.label)\", \"library\": \"\(info.library)\"}"
            if let needle, !line.lowercased().contains(needle) { continue }
            // Only what a file can use: the others are counted, and --info says why.
            if info.hostingProblem != nil { unhostable += 1; continue }
            lines.append("  " + line)
            pluginsListed += 1
        }
        if unhostable > 0 {
            lines.append("  (and \(unhostable) installed plugin\(unhostable == 1 ? "" : "s") not listed: \(unhostable == 1 ? "it cannot" : "they cannot") be hosted here, as instruments or with more audio inputs than outputs; graphrun --info NAME says why)")
        }
        if let text, !typesMatched, pluginsListed == 0 { lines.append("nothing matches '\(text)'") }
        return lines.joined(separator: "\n")
    }

    /// `graphrun --info NAME`: a plugin's ports and parameters (file names = port symbols), for
    /// an LV2 URI, a LADSPA label or unique ID; nil when nothing has that name.
    static func pluginDescription(_ name: String) -> String? {
        let info: PluginInfo
        // Only a URI is asked of lilv (it complains on stderr about anything else); a LADSPA
        // plugin by label, unique ID or its identifier (library:label).
        let looksLikeURI = name.contains("://") || name.hasPrefix("urn:")
        if looksLikeURI, let found = try? LV2.find(uri: name) {
            info = found
        } else if let found = LADSPA.scan().first(where: { $0.label == name || String($0.uniqueID) == name || $0.identifier == name }) {
            info = found
        } else {
            return nil
        }
        var lines = ["\(info.standard.rawValue) \(info.standard == .lv2 ? info.identifier : info.label): \"\(info.name)\" by \(info.maker.isEmpty ? "?" : info.maker)",
                     "  library: \(info.library)",
                     "  component: \(info.componentDescription) (subtype 0x\(String(info.componentDescription.componentSubType, radix: 16)))",
                     "  audio: \(info.audioInputs.count) in, \(info.audioOutputs.count) out"]
        if !info.requiredFeatures.isEmpty { lines.append("  requires: \(info.requiredFeatures.joined(separator: ", "))") }
        if info.hostingProblem == nil, let unit = try? PluginUnit(info) {
            if unit.hasState { lines.append("  state: the LV2 state extension (a file's \"state\": {\"<key URI>\": {\"type\": …, \"value\": …}})") }
            if unit.hasWorker { lines.append("  worker: the LV2 worker extension (a worker thread per instance)") }
            for p in unit.parameterList(scope: .global) {
                guard let port = unit.port(forParameter: p.id) else { continue }
                var line = "  \(p.isReadOnly ? "output" : "parameter") \(port.symbol) (id \(p.id), \"\(port.name)\"): \(ParameterTable.describe(p))"
                if port.isToggle { line += ", toggle" }
                if port.isInteger { line += ", integer" }
                if port.reportsLatency { line += ", latency in frames" }
                if !port.scalePoints.isEmpty { line += "; values: " + port.scalePoints.map { "\($0.value) = \($0.label)" }.joined(separator: ", ") }
                lines.append(line)
            }
        } else if let problem = info.hostingProblem {
            lines.append("  cannot be hosted here: \(problem)")
        } else {
            do throws(PluginError) { _ = try PluginUnit(info) } catch { lines.append("  cannot be hosted here: \(error)") }
        }
        return lines.joined(separator: "\n")
    }
}

extension ShapeField {
    /// "(1…1024, default 1)" and the like, for `--list`.
    var defaultDescription: String {
        switch kind {
        case .count(let range, let d): return "(\(range.lowerBound)…\(range.upperBound), default \(d))"
        case .format: return "(1…64, default the file's channels)"
        case .counts(let d): return "(default \(ShapeValue.ints(d)))"
        case .file: return "(required)"
        case .choice(let names, let d): return "(\(names.joined(separator: " | ")), default \(d))"
        case .text(let required): return required ? "(required)" : "(optional)"
        }
    }
}

extension Dictionary where Key == String, Value == ShapeValue {
    func int(_ name: String) -> Int? { if case .int(let n)? = self[name] { return n }; return nil }
    func ints(_ name: String) -> [Int]? { if case .ints(let list)? = self[name] { return list }; return nil }
    func text(_ name: String) -> String? { if case .text(let s)? = self[name] { return s }; return nil }
}
