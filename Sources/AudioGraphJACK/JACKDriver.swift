import AudioGraph
