// play-through: Apple's classic AUGraph play-through with a mute switch, ported — the speaker's render callback pulls the microphone (AudioUnitRender on element 1) and zeroes it when muted; `--gate` does the same with a MuteGateUnit instead.
//
//   swift run play-through [--gate] [--server NAME] [--name CLIENT] [--input PORT] [--output PORT]
//
// Then type `mute`, `unmute` or `quit` (one per line; end of input quits too). Without
// --input/--output it connects the server's physical capture and playback ports.
//
// The Apple original (an AUGraph with RemoteIO, iOS):
//
//     static OSStatus renderInput(void *inRefCon, AudioUnitRenderActionFlags *ioActionFlags,
//                                 const AudioTimeStamp *inTimeStamp, UInt32 inBusNumber,
//                                 UInt32 inNumberFrames, AudioBufferList *ioData) {
//         MyState *s = (MyState *)inRefCon;
//         OSStatus err = AudioUnitRender(s->rioUnit, ioActionFlags, inTimeStamp, 1, inNumberFrames, ioData);
//         if (s->muted) for (UInt32 i = 0; i < ioData->mNumberBuffers; i++)
//             memset(ioData->mBuffers[i].mData, 0, ioData->mBuffers[i].mDataByteSize);
//         return err;
//     }
//     AURenderCallbackStruct cb = { renderInput, &state };
//     AUGraphSetNodeInputCallback(graph, rioNode, 0, &cb);
//
// Here: `setNodeInputCallback(ioNode, inputElement: 0, pulling: [microphone])` declares what
// the callback pulls, `context.render(…)` is AudioUnitRender, and the mute flag is an Atomic in
// a Sendable class instead of a field behind inRefCon (RealTimeRules, "Sharing state with a
// callback"). Muting in the callback cuts at a slice boundary (a click on loud input); the
// `--gate` way ramps over 10 ms and never clicks — prefer it when the mute is all you need.
import AudioGraph
import AudioGraphJACK
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The mute switch the render callback reads and this (main) thread sets.
final class MuteSwitch: Sendable {
    let isOn = Atomic<Bool>(false)
}

/// Prints `play-through: message` on stderr and exits. (Not `fputs(…, stderr)`: Swift 6 refuses
/// Glibc's mutable `stderr` global; write(2) on descriptor 2 needs none.)
func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = "play-through: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(status)
}

// Options.
var useGate = false
var options = JACKDriver.Options()
options.clientName = "play-through"
var inputs: [String] = [], outputs: [String] = []
var arguments = CommandLine.arguments.dropFirst()
@MainActor func value(_ option: String) -> String {  // reads top-level state: main-actor code
    guard let value = arguments.popFirst() else { fail("\(option) needs a value", status: 2) }
    return value
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--gate": useGate = true
    case "--server": options.serverName = value(argument)
    case "--name": options.clientName = value(argument)
    case "--input": inputs.append(value(argument))
    case "--output": outputs.append(value(argument))
    case "--help":
        print("usage: play-through [--gate] [--server NAME] [--name CLIENT] [--input PORT]... [--output PORT]...")
        print("then type mute, unmute or quit; exit status 0, 1 when JACK fails, 2 for bad options")
        exit(0)
    default: fail("unknown option '\(argument)' (try --help)", status: 2)
    }
}

let mute = MuteSwitch()
let graph = AudioGraph()
let io = IOUnit()
let gate = MuteGateUnit()
do {
    let ioNode = try graph.addNode(io)
    try io.setInputEnabled(true)
    let microphone = AUNodeOutput(ioNode, element: IOUnit.inputElement)
    if useGate {
        // The engine's way: IO element 1 → mute gate → IO element 0.
        let gateNode = try graph.addNode(gate)
        try graph.connectNodeInput(ioNode, sourceOutputElement: IOUnit.inputElement, gateNode, destinationInputElement: 0)
        try graph.connectNodeInput(gateNode, sourceOutputElement: 0, ioNode, destinationInputElement: IOUnit.outputElement)
    } else {
        // The AUGraph way: the speaker's input callback pulls the microphone.
        try graph.setNodeInputCallback(ioNode, inputElement: IOUnit.outputElement, pulling: [microphone]) { context in
            let status = context.render(microphone.node, element: microphone.element)   // AudioUnitRender(rio, …, 1, …)
            if mute.isOn.load(ordering: .relaxed) {
                for c in 0..<context.buffers.channelCount { context.buffers[c].update(repeating: 0) }
            }
            return status
        }
    }
} catch {
    fail("\(error)")
}

let driver: JACKDriver
do {
    driver = try JACKDriver(graph: graph, options: options)
    try driver.start()
    if inputs.isEmpty && outputs.isEmpty {
        _ = try driver.connectPhysicalPorts()
    } else {
        for (port, input) in zip(inputs, driver.inputPortNames) { try driver.connect(port, to: input) }
        for (output, port) in zip(driver.outputPortNames, outputs) { try driver.connect(output, to: port) }
    }
} catch {
    fail("\(error)")
}
print("play-through: \(useGate ? "mute gate" : "render callback") · client '\(driver.clientName)' · \(driver.sampleRate) Hz · period \(driver.bufferSize)")
print("mute: off")
fflush(nil)  // not fflush(stdout): Swift 6 refuses the global (RealTimeRules)

commands: while let line = readLine() {
    switch line.split(separator: " ").first.map(String.init) ?? "" {
    case "mute":
        if useGate { gate.isMuted = true } else { mute.isOn.store(true, ordering: .relaxed) }
        print("mute: on")
    case "unmute":
        if useGate { gate.isMuted = false } else { mute.isOn.store(false, ordering: .relaxed) }
        print("mute: off")
    case "quit": break commands
    case "": continue
    default: print("commands: mute, unmute, quit")
    }
    fflush(nil)
}
driver.close()
print("stopped; \(driver.xrunCount) xrun(s), \(graph.renderErrorCount) render error(s)")
