// Tests, Components: finding units by description, instantiating them, adding nodes by description, registering components and providers.
import AudioGraph
import Synchronization
import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Testing
import AudioGraphTestSupport

@Suite("Components: find, instantiate, add by description")
struct AudioComponentTests {
    @Test func fourCharacterCodesRoundTrip() throws {
        #expect(FourCharCode(fourCharacters: "aufx") == 0x6175_6678)
        #expect(FourCharCode(0x6175_6678).fourCharacters == "aufx")
        #expect(FourCharCode(fourCharacters: "toolong") == nil && FourCharCode(fourCharacters: "ab") == nil)
        #expect(throws: AudioUnitError.invalidPropertyValue) { try AudioComponentDescription(type: "aufx", subType: "lowpass") }
        #expect(try AudioComponentDescription(type: "aufx", subType: "lpas").description == "aufx/lpas/*")
    }

    /// AudioComponentFindNext with wildcards: every effect, then the low-pass by its codes.
    @Test func findNextWalksTheMatchesInOrder() throws {
        try componentRegistryTestLock.withLock { _ in
            let effects = try AudioComponentDescription(type: "aufx")
            var found: [String] = []
            var component = AudioComponentRegistry.findNext(matching: effects)
            while let c = component {
                found.append(c.componentDescription.componentSubType.fourCharacters)
                component = AudioComponentRegistry.findNext(after: c, matching: effects)
            }
            #expect(found.starts(with: ["lpas", "mute"]), "\(found)")
            #expect(AudioComponentRegistry.count(matching: effects) == found.count)
            let lowPass = try #require(AudioComponentRegistry.findNext(matching: try AudioComponentDescription(type: "aufx", subType: "lpas", manufacturer: "appl")))
            #expect(lowPass.name == "Apple: AULowpass" && lowPass.version == 0x0001_0000 && lowPass.origin == "built-in")
            #expect(try lowPass.instantiate() is LowPassFilterUnit)
            #expect(AudioComponentRegistry.findNext(matching: try AudioComponentDescription(type: "aufx", subType: "nope")) == nil)
            #expect(AudioComponentRegistry.count(matching: AudioComponentDescription(componentType: 0)) == AudioComponentRegistry.all.count)
        }
    }

    /// Every built-in instantiates, each description is taken once, and Apple's codes make the
    /// unit Apple's code names (the catalogue's filters, EQs and delays among them).
    @Test func everyBuiltInInstantiatesUnderItsCodes() throws {
        let descriptions = AudioComponentRegistry.builtIns.map(\.componentDescription)
        #expect(Set(descriptions.map(\.description)).count == descriptions.count, "no description twice")
        for component in AudioComponentRegistry.builtIns { _ = try component.instantiate() }
        let expected: [(String, String, String, AudioUnit.Type)] = [
            ("aufx", "hpas", "appl", HighPassFilterUnit.self), ("aufx", "bpas", "appl", BandPassFilterUnit.self),
            ("aufx", "lshf", "appl", LowShelfFilterUnit.self), ("aufx", "hshf", "appl", HighShelfFilterUnit.self),
            ("aufx", "pmeq", "appl", ParametricEQUnit.self), ("aufx", "nbeq", "appl", NBandEQUnit.self),
            ("aufx", "dely", "appl", DelayUnit.self), ("aufx", "sdly", "appl", SampleDelayUnit.self),
            ("aufx", "ntch", "AGph", NotchFilterUnit.self), ("aufx", "apas", "AGph", AllPassFilterUnit.self),
            ("aufx", "dcmp", "appl", DynamicsProcessorUnit.self), ("aufx", "lmtr", "appl", PeakLimiterUnit.self),
        ]
        for (type, subType, manufacturer, unitType) in expected {
            let description = try AudioComponentDescription(type: type, subType: subType, manufacturer: manufacturer)
            let component = try #require(AudioComponentRegistry.findNext(matching: description), "\(description)")
            let unit = try component.instantiate()
            #expect(ObjectIdentifier(Swift.type(of: unit)) == ObjectIdentifier(unitType), "\(description) made \(Swift.type(of: unit))")
        }
    }

    /// AUGraphAddNode by description builds a working graph: IO (rioc) → low-pass (lpas) → IO.
    @Test func aGraphBuiltFromDescriptionsRenders() throws {
        let graph = AudioGraph()
        let ioNode = try graph.addNode(try AudioComponentDescription(type: "auou", subType: "rioc", manufacturer: "appl"))
        let filterNode = try graph.addNode(try AudioComponentDescription(type: "aufx", subType: "lpas"))
        let io = try #require(try graph.nodeInfo(ioNode) as? IOUnit)
        try io.setInputEnabled(true)
        try graph.connectNodeInput(ioNode, sourceOutputElement: 1, filterNode, destinationInputElement: 0)
        try graph.connectNodeInput(filterNode, sourceOutputElement: 0, ioNode, destinationInputElement: 0)
        let renderer = try OfflineRenderer(graph: graph, inputChannels: 2, outputChannels: 2)
        try graph.initialize()
        try graph.start()
        let noiseIn = noise(frames: 4800, seed: 5)
        let out = try renderer.render(input: [noiseIn, noiseIn], frameCount: 4800)
        #expect(rms(out[0][2400...]) < rms(noiseIn[2400...]) * 0.9, "the 6.9 kHz low-pass took energy out of white noise")
        let before = graph.nodeCount
        #expect(throws: AudioUnitError.invalidAudioUnit) { try graph.addNode(try AudioComponentDescription(type: "aufx", subType: "zzzz")) }
        #expect(graph.nodeCount == before, "nothing added")
    }

    /// An application's own component and a provider's appear beside the built-ins; a
    /// description already taken is refused; refresh() scans providers again.
    @Test func registeredComponentsAndProviders() throws {
        try componentRegistryTestLock.withLock { _ in
            let tremolo = AudioComponent(try AudioComponentDescription(type: "aufx", subType: "trem", manufacturer: "Test"),
                                         name: "Test: Tremolo", origin: "application") { () throws(AudioUnitError) in
                try RenderCallbackUnit(inputs: 1) { _ in 0 }
            }
            try AudioComponentRegistry.register(tremolo)
            #expect(AudioComponentRegistry.findNext(matching: try AudioComponentDescription(type: "aufx", subType: "trem")) === tremolo)
            #expect(throws: AudioUnitError.invalidPropertyValue, "taken") { try AudioComponentRegistry.register(tremolo) }
            let lowPassAgain = AudioComponent(try AudioComponentDescription(type: "aufx", subType: "lpas", manufacturer: "appl"),
                                              name: "x", origin: "application") { LowPassFilterUnit() }
            #expect(throws: AudioUnitError.invalidPropertyValue, "a built-in's codes") { try AudioComponentRegistry.register(lowPassAgain) }

            final class Counting: AudioComponentProvider {
                let scans = Atomic<Int>(0)
                func scan() -> [AudioComponent] {
                    scans.add(1, ordering: .relaxed)
                    usleep(20_000)  // as a plugin scan takes time: lookups meanwhile overlap it
                    return [AudioComponent(try! AudioComponentDescription(type: "aufx", subType: "prov", manufacturer: "Test"),
                                           name: "Test: Provided", origin: "test provider") { MuteGateUnit() }]
                }
            }
            let provider = Counting()
            AudioComponentRegistry.addProvider(provider)
            #expect(AudioComponentRegistry.findNext(matching: try AudioComponentDescription(type: "aufx", subType: "prov"))?.origin == "test provider")
            _ = AudioComponentRegistry.all
            #expect(provider.scans.load(ordering: .relaxed) == 1, "scanned once, then remembered")
            AudioComponentRegistry.refresh()
            _ = AudioComponentRegistry.all
            #expect(provider.scans.load(ordering: .relaxed) == 2, "refresh scans again")
            // Threads that look up at once after a refresh scan once between them.
            AudioComponentRegistry.refresh()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in _ = AudioComponentRegistry.all }
            #expect(provider.scans.load(ordering: .relaxed) == 3, "four lookups at once, one scan")
        }
    }
}
