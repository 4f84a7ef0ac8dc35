import AudioEngine
import AudioMeasurement
import Foundation

/// Fuzzing the decoders: well-formed seed files in every format the engine reads, mutated
/// (bytes flipped, ranges overwritten or zeroed, cut short, chunks repeated) by a seeded
/// generator so a run can be repeated, each mutant decoded to the end by `musickit probe` in
/// a process of its own: a clean refusal or a decode is fine; a crash (the process died of a
/// signal) or a hang (no answer within the time limit) is a finding, kept for replay.
struct FuzzBenchmarks {
    let musickit: URL
    let mutants: Int
    let seed: UInt64
    let report: Report
    /// Seconds a probe may take before it counts as a hang.
    static let timeLimitSeconds = 20.0

    struct Findings {
        var decoded = 0
        var refused = 0
        var crashes: [String] = []
        var hangs: [String] = []
    }

    /// Runs the mutants; returns what was found (crashes and hangs are also copied to
    /// `findingsDirectory`).
    @discardableResult
    func run(findingsDirectory: URL) throws -> Findings {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-fuzz-\(getpid())")
        try? FileManager.default.removeItem(at: work)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let seeds = try makeSeeds(in: work)
        var generator = CatalogBenchmarks.Generator(state: seed)
        var findings = Findings()
        let started = monotonicNanoseconds()
        // Two at a time: one per core.
        var running: [(process: Process, file: URL, started: UInt64)] = []
        var made = 0
        func reap(_ index: Int, timedOut: Bool) {
            let (process, file, _) = running.remove(at: index)
            if timedOut {
                process.terminate()
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                findings.hangs.append(keep(file, in: findingsDirectory))
            } else if process.terminationReason == .uncaughtSignal {
                findings.crashes.append(keep(file, in: findingsDirectory) + " (signal \(process.terminationStatus))")
            } else if process.terminationStatus == 0 {
                findings.decoded += 1
            } else {
                findings.refused += 1
            }
            try? FileManager.default.removeItem(at: file)
        }
        while made < mutants || !running.isEmpty {
            while made < mutants && running.count < 2 {
                let (name, original) = seeds[Int(generator.next() % UInt64(seeds.count))]
                let file = work.appendingPathComponent("mutant-\(made)-\(name)")
                try Data(mutate(original, &generator)).write(to: file)
                let process = Process()
                process.executableURL = musickit
                process.arguments = ["probe", "--quiet", file.path]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                running.append((process, file, monotonicNanoseconds()))
                made += 1
            }
            usleep(1_000)
            for index in running.indices.reversed() {
                if !running[index].process.isRunning {
                    reap(index, timedOut: false)
                } else if Double(monotonicNanoseconds() - running[index].started) / 1e9 > Self.timeLimitSeconds {
                    reap(index, timedOut: true)
                }
            }
        }
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        report.add(Row("decoder fuzzing: crashes + hangs", unit: "count",
                       values: [Double(findings.crashes.count + findings.hangs.count)],
                       note: "\(mutants) mutants of \(seeds.count) seed files (\(seeds.map(\.0).joined(separator: ", "))), "
                           + "seed \(seed), \(String(format: "%.1f", seconds)) s: \(findings.decoded) decoded, "
                           + "\(findings.refused) refused with a reason, \(findings.crashes.count) crashes, "
                           + "\(findings.hangs.count) hangs (> \(Int(Self.timeLimitSeconds)) s)"
                           + (findings.crashes.isEmpty && findings.hangs.isEmpty ? ""
                              : "; kept in \(findingsDirectory.path): " + (findings.crashes + findings.hangs).joined(separator: ", "))))
        return findings
    }

    private func keep(_ file: URL, in directory: URL) -> String {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let destination = directory.appendingPathComponent(file.lastPathComponent)
        try? FileManager.default.removeItem(at: destination)
        try? FileManager.default.copyItem(at: file, to: destination)
        return destination.lastPathComponent
    }

    /// Half a second of a stereo sweep in each format libsndfile reads here, and in MP4 (AAC
    /// and ALAC, made by Debian's ffmpeg) for FFmpeg's reader.
    private func makeSeeds(in directory: URL) throws -> [(String, [UInt8])] {
        let signal = Fixtures.sweepSignal(frames: 22_050)
        let formats: [(String, AudioFileWriter.Format)] = [
            ("seed.wav", .wav16), ("seed.flac", .flac16), ("seed.ogg", .oggVorbis(quality: 0.4)),
            ("seed.opus", .opus(quality: 0.5)), ("seed.mp3", .mp3(quality: 0.5))]
        var seeds = try formats.map { name, format in
            let url = directory.appendingPathComponent(name)
            try Fixtures.write(url, signal, format: format, sampleRate: name == "seed.opus" ? 48_000 : 44_100)
            return (name, Array(try Data(contentsOf: url)))
        }
        for (name, codec) in [("seed-aac.m4a", "aac"), ("seed-alac.m4a", "alac")] {
            let url = directory.appendingPathComponent(name)
            try encodeWithFFmpeg(directory.appendingPathComponent("seed.wav"), to: url, codec: codec)
            seeds.append((name, Array(try Data(contentsOf: url))))
        }
        return seeds
    }

    /// One to three mutations of `original`.
    private func mutate(_ original: [UInt8], _ generator: inout CatalogBenchmarks.Generator) -> [UInt8] {
        var bytes = original
        for _ in 0..<(1 + Int(generator.next() % 3)) where !bytes.isEmpty {
            let position = Int(generator.next() % UInt64(bytes.count))
            // Headers decide most parsing: aim a third of the mutations at the first 256 bytes.
            let target = generator.next() % 3 == 0 ? position % min(256, bytes.count) : position
            switch generator.next() % 6 {
            case 0:  // flip bits
                for offset in 0..<Int(1 + generator.next() % 8) where target + offset < bytes.count {
                    bytes[target + offset] ^= UInt8(truncatingIfNeeded: 1 << (generator.next() % 8))
                }
            case 1:  // overwrite with random bytes
                for offset in 0..<Int(1 + generator.next() % 64) where target + offset < bytes.count {
                    bytes[target + offset] = UInt8(truncatingIfNeeded: generator.next())
                }
            case 2:  // interesting values (sizes, counts)
                let values: [UInt8] = [0x00, 0xFF, 0x7F, 0x80, 0x01]
                for offset in 0..<4 where target + offset < bytes.count {
                    bytes[target + offset] = values[Int(generator.next() % UInt64(values.count))]
                }
            case 3:  // cut short
                bytes.removeSubrange(max(1, target)...)
            case 4:  // repeat a chunk
                let length = min(bytes.count - target, Int(1 + generator.next() % 4_096))
                bytes.insert(contentsOf: bytes[target..<(target + length)], at: target)
            default:  // zero a range
                for offset in 0..<Int(1 + generator.next() % 512) where target + offset < bytes.count { bytes[target + offset] = 0 }
            }
        }
        return bytes
    }
}
