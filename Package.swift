// swift-tools-version:6.0
// AudioGraph: an AUGraph-style real-time audio graph engine for Linux, pulled by JACK.
// Dependencies point one way: Examples → ToolSupport (what the tools share) → AudioGraphJACK (driver) → AudioGraph (core, no JACK).
import PackageDescription

let package = Package(
    name: "AudioGraph",
    products: [
        .library(name: "AudioGraph", targets: ["AudioGraph"]),
        .library(name: "AudioGraphJACK", targets: ["AudioGraphJACK"]),
        .executable(name: "graphthru", targets: ["graphthru"]),
        .executable(name: "graphrun", targets: ["graphrun"]),
        .executable(name: "first-graph", targets: ["first-graph"]),
        .executable(name: "custom-unit", targets: ["custom-unit"]),
        .executable(name: "play-through", targets: ["play-through"]),
        .executable(name: "speech-recorder", targets: ["speech-recorder"]),
        .executable(name: "voice-memo", targets: ["voice-memo"]),
        .executable(name: "graphrecord", targets: ["graphrecord"]),
        .executable(name: "graphvoice", targets: ["graphvoice"]),
        .executable(name: "graphbench", targets: ["graphbench"]),
        .library(name: "AudioGraphPlugins", targets: ["AudioGraphPlugins"]),
    ],
    targets: [
        // libjack from Debian's libjack-jackd2-dev; a shim wraps the variadic jack_client_open.
        .systemLibrary(
            name: "CJack",
            path: "Sources/CJack",
            pkgConfig: "jack",
            providers: [.apt(["libjack-jackd2-dev"])]
        ),
        // A child program that cannot outlive this process (a watchdog told by PR_SET_PDEATHSIG,
        // then exec): how JACKServer runs jack2's jackd as a separate program, nothing of it
        // linked or loaded.
        .target(
            name: "CProcessSpawn",
            path: "Sources/CProcessSpawn"
        ),
        // libsndfile from Debian's libsndfile1-dev: reading and writing audio files.
        .systemLibrary(
            name: "CSndFile",
            path: "Sources/CSndFile",
            pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]
        ),
        // libebur128 from Debian's libebur128-dev (MIT): EBU R128 / ITU-R BS.1770 loudness
        // (momentary, short-term, integrated, loudness range) and true peak.
        .systemLibrary(
            name: "CEBUR128",
            path: "Sources/CEBUR128",
            pkgConfig: "libebur128",
            providers: [.apt(["libebur128-dev"])]
        ),
        // libsamplerate from Debian's libsamplerate0-dev: sample-rate conversion. src_process
        // works in memory allocated by src_new, so it may run on the render thread.
        .systemLibrary(
            name: "CSampleRate",
            path: "Sources/CSampleRate",
            pkgConfig: "samplerate",
            providers: [.apt(["libsamplerate0-dev"])]
        ),
        // KissFFT from Debian's libkissfft-dev (BSD-3-Clause), float build: the real FFTs of the
        // convolution reverb and the analyser. kiss_fftr works in the memory kiss_fftr_alloc
        // allocated, so it may run on the render thread. No pkgConfig: its .pc (kissfft-float)
        // adds only -D flags SwiftPM refuses (float is the header's default anyway); the header
        // and library are on the default paths.
        .systemLibrary(
            name: "CKissFFT",
            path: "Sources/CKissFFT",
            providers: [.apt(["libkissfft-dev"])]
        ),
        // SoundTouch from Debian's libsoundtouch-dev (LGPL-2.1, linked dynamically): WSOLA
        // time-stretch and pitch shift for the time-pitch unit. C++, so Swift calls it through
        // the C shim CSoundTouch; this module carries pkg-config's flags and the link.
        .systemLibrary(
            name: "CSoundTouchLibrary",
            path: "Sources/CSoundTouchLibrary",
            pkgConfig: "soundtouch",
            providers: [.apt(["libsoundtouch-dev"])]
        ),
        // A C face on soundtouch::SoundTouch (create, configure, put, receive, destroy).
        .target(
            name: "CSoundTouch",
            dependencies: ["CSoundTouchLibrary"],
            path: "Sources/CSoundTouch",
            linkerSettings: [.linkedLibrary("stdc++")]
        ),
        // webrtc-audio-processing 0.3 from Debian's libwebrtc-audio-processing-dev (BSD-3-Clause):
        // WebRTC's echo canceller, noise suppressor, AGC and VAD for voice processing. C++, so
        // Swift calls it through the C shim CWebRTCAudioProcessing; this module carries
        // pkg-config's flags and the link.
        .systemLibrary(
            name: "CWebRTCAudioProcessingLibrary",
            path: "Sources/CWebRTCAudioProcessingLibrary",
            pkgConfig: "webrtc-audio-processing",
            providers: [.apt(["libwebrtc-audio-processing-dev"])]
        ),
        // A C face on webrtc::AudioProcessing (create, configure, 10 ms frames, metrics, destroy).
        .target(
            name: "CWebRTCAudioProcessing",
            dependencies: ["CWebRTCAudioProcessingLibrary"],
            path: "Sources/CWebRTCAudioProcessing",
            // pkg-config's Cflags also carry these two; SwiftPM drops -D flags from pkg-config
            // (it warns "prohibited flag(s)"), so they are set here.
            cxxSettings: [.define("WEBRTC_POSIX"), .define("WEBRTC_AUDIO_PROCESSING_ONLY_BUILD")],
            linkerSettings: [.linkedLibrary("stdc++")]
        ),
        // The engine core: formats, units, graph, render plan, offline driver. No JACK client
        // here: from libjack it uses only jack_ringbuffer (the lock-free render → consumer FIFO
        // of taps and the file player); libsndfile reads and writes audio files; KissFFT
        // transforms.
        .target(
            name: "AudioGraph",
            dependencies: ["CSampleRate", "CJack", "CSndFile", "CKissFFT", "CSoundTouch", "CEBUR128", "CWebRTCAudioProcessing"],
            path: "Sources/AudioGraph"
        ),
        // The JACK driver: a client whose process callback pulls the graph.
        .target(
            name: "AudioGraphJACK",
            dependencies: ["AudioGraph", "CJack", "CProcessSpawn"],
            path: "Sources/AudioGraphJACK"
        ),
        // What the command-line tools share: output and exit statuses, quit signals through a
        // self-pipe, the poll main loop, option parsing, port routing and a recording file
        // checked before JACK is joined.
        .target(
            name: "ToolSupport",
            dependencies: ["AudioGraph", "AudioGraphJACK"],
            path: "Sources/ToolSupport"
        ),
        .executableTarget(
            name: "graphthru",
            dependencies: ["AudioGraph", "AudioGraphJACK", "ToolSupport", "AudioGraphPlugins"],
            path: "Examples/graphthru"
        ),
        // Records JACK input to a file: the example of the TapsMetersRecording article (AudioGraph.docc).
        .executableTarget(
            name: "graphrecord",
            dependencies: ["AudioGraph", "AudioGraphJACK", "ToolSupport"],
            path: "Examples/graphrecord"
        ),
        // Voice processing on JACK: the far end from a file, the microphone's echo cancelled (auou/vpio).
        .executableTarget(
            name: "graphvoice",
            dependencies: ["AudioGraph", "AudioGraphJACK", "ToolSupport"],
            path: "Examples/graphvoice"
        ),
        // Runs a graph described in a JSON file, and applies the file's edits live.
        .executableTarget(
            name: "graphrun",
            dependencies: ["AudioGraph", "AudioGraphJACK", "ToolSupport", "AudioGraphPlugins"],
            path: "Examples/graphrun"
        ),
        .executableTarget(
            name: "first-graph",
            dependencies: ["AudioGraph"],
            path: "Examples/FirstGraph"
        ),
        .executableTarget(
            name: "custom-unit",
            dependencies: ["AudioGraph"],
            path: "Examples/CustomUnit"
        ),
        .executableTarget(
            name: "play-through",
            dependencies: ["AudioGraph", "AudioGraphJACK"],
            path: "Examples/PlayThrough"
        ),
        .executableTarget(
            name: "speech-recorder",
            dependencies: ["AudioGraph", "AudioGraphJACK"],
            path: "Examples/SpeechRecorder"
        ),
        .executableTarget(
            name: "voice-memo",
            dependencies: ["AudioGraph", "AudioGraphJACK"],
            path: "Examples/VoiceMemo"
        ),
        // The benchmark's plain-C reference: the standard graph's arithmetic as tight loops (and the
        // convolver's on KissFFT).
        .target(
            name: "CReference",
            path: "Benchmarks/CReference",
            linkerSettings: [.linkedLibrary("m"), .linkedLibrary("kissfft-float")]
        ),
        .executableTarget(
            name: "graphbench",
            dependencies: ["AudioGraph", "CReference", "AudioGraphPlugins", "CSoundTouch", "CSampleRate"],
            path: "Benchmarks/graphbench"
        ),
        // The one test-support target both test targets share: offline graphs and signals, converters
        // over whole signals, real jackd servers, the probe client, speech, the tools as child processes.
        .target(
            name: "AudioGraphTestSupport",
            dependencies: ["AudioGraph", "CJack", "CSndFile"],
            path: "Tests/AudioGraphTestSupport"
        ),
        .testTarget(
            name: "AudioGraphTests",
            dependencies: ["AudioGraph", "AudioGraphTestSupport", "CSndFile"],
            path: "Tests/AudioGraphTests"
        ),
        // Test support: counts allocations and lock calls on armed threads (interposes malloc).
        .target(
            name: "CAllocCounter",
            path: "Tests/CAllocCounter",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        .testTarget(
            name: "AudioGraphJACKTests",
            dependencies: ["AudioGraph", "AudioGraphJACK", "AudioGraphTestSupport", "CJack", "CSndFile", "CAllocCounter", "AudioGraphPlugins", "ToolSupport"],
            path: "Tests/AudioGraphJACKTests"
        ),
        // lilv from Debian's liblilv-dev (ISC) and the LV2 headers (lv2-dev): finding and loading LV2 plugins.
        .systemLibrary(
            name: "CLilv",
            path: "Sources/CLilv",
            pkgConfig: "lilv-0",
            providers: [.apt(["liblilv-dev", "lv2-dev"])]
        ),
        // ladspa.h from Debian's ladspa-sdk (the interface header only) and dlopen: LADSPA plugins.
        .systemLibrary(
            name: "CLADSPA",
            path: "Sources/CLADSPA",
            providers: [.apt(["ladspa-sdk"])]
        ),
        // The LV2 host features written in C: log:log (its printf is variadic, which Swift cannot
        // implement) and the worker extension (a thread and two jack_ringbuffer FIFOs from
        // libjack-jackd2-dev); headers from lv2-dev.
        .target(
            name: "CLV2Host",
            path: "Sources/CLV2Host",
            linkerSettings: [.linkedLibrary("jack"), .linkedLibrary("pthread")]
        ),
        // LV2 and LADSPA plugins as graph units and as components in AudioComponentRegistry.
        .target(
            name: "AudioGraphPlugins",
            dependencies: ["AudioGraph", "CLilv", "CLADSPA", "CLV2Host"],
            path: "Sources/AudioGraphPlugins"
        ),
        .testTarget(
            name: "AudioGraphPluginsTests",
            dependencies: ["AudioGraph", "AudioGraphPlugins", "AudioGraphTestSupport", "CSndFile"],
            path: "Tests/AudioGraphPluginsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
