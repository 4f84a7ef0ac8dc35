import AudioEngine
import Foundation

func say(_ items: Any...) { let s = items.map { "\($0)" }.joined(separator: " ") + "\n"; _ = s.withCString { write(1, $0, strlen($0)) } }
var configuration = AudioEngineConfiguration(deviceName: CommandLine.arguments[1])
let engine = AudioEngine(configuration: configuration)
engine.setEventHandler { event in say("event:", event) }
engine.setQueue(AudioEntryList(paths: Array(CommandLine.arguments.dropFirst(2))))
let t0 = monotonicNanoseconds()
do {
    try engine.prepare()
    say("prepared in", Double(monotonicNanoseconds() - t0) / 1e6, "ms", engine.statistics)
    try engine.play()
} catch { say("error:", error); exit(1) }
while engine.status == .playing || engine.status == .prepared {
    usleep(100_000)
    say("pos", engine.position)
}
say("status", engine.status, engine.statistics)
engine.stop()
