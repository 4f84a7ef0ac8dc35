import AudioEngine
import AudioMeasurement
import Foundation

/// Sound Check's figures (issue #45): what measuring a song costs, what reading its ReplayGain
/// tags costs (done when an entry opens with normalization on), and the bundled previews'
/// loudness as heard at the monitor without and with normalization (the sampler's spread).
struct LoudnessBenchmarks {
    let device: String
    let recorder: MonitorRecorder
    let assets: URL
    let report: Report

    func run() throws {
        let previews = try FileManager.default.contentsOfDirectory(atPath: assets.appendingPathComponent("Previews").path)
            .filter { $0.hasSuffix(".ogg") }.sorted()
            .map { assets.appendingPathComponent("Previews/\($0)").path }
        guard !previews.isEmpty else { return progress("loudness: no previews in \(assets.path)") }

        var measured: [String: LoudnessMeasurement] = [:]
        var milliseconds: [Double] = []
        var timesRealtime: [Double] = []
        for path in previews {
            let began = monotonicNanoseconds()
            guard let measurement = try LoudnessMeter.measure(path: path) else { continue }
            let elapsed = Double(monotonicNanoseconds() - began) / 1e6
            measured[path] = measurement
            milliseconds.append(elapsed)
            let seconds = (try? AudioFileDecoder.info(path: path))?.duration ?? 0
            if elapsed > 0 { timesRealtime.append(seconds * 1_000 / elapsed) }
        }
        report.add(Row("loudness: measure a 30 s Ogg preview (EBU R128, libebur128, decode included)", unit: "ms",
                       values: milliseconds, note: String(format: "%.0f× realtime (median); %d previews",
                                                         Summary.quantile(timesRealtime, 0.5), previews.count)))

        var tagReads: [Double] = []
        for path in previews + previews {
            let began = monotonicNanoseconds()
            _ = AudioFileDecoder.loudnessTags(atPath: path)
            tagReads.append(Double(monotonicNanoseconds() - began) / 1e6)
        }
        report.add(Row("loudness: read a file's ReplayGain tags (FFmpeg's demuxer; on each entry's open when normalization is on)",
                       unit: "ms", values: tagReads, note: "the second read of each file counted too (page cache warm)"))

        // The same 2 s of each preview (from 10 s in), heard at the monitor, without and with normalization.
        var before: [Double] = []
        var after: [Double] = []
        for path in previews {
            guard let measurement = measured[path] else { continue }
            for normalized in [false, true] {
                var entry = AudioEntry(token: .init(rawValue: 1), path: path, startTime: 10, endTime: 13,
                                       normalization: normalized ? .track(preampDB: 0) : .off)
                entry.knownLoudness = measurement.replayGain
                var configuration = AudioEngineConfiguration(deviceName: device)
                configuration.sampleFormats = [.int16]
                let engine = AudioEngine(configuration: configuration)
                engine.setQueue(AudioEntryList(entries: [entry]))
                do { try engine.play() } catch { progress("play failed: \(error)"); continue }
                Thread.sleep(forTimeInterval: 0.5)
                let from = monotonicNanoseconds()
                Thread.sleep(forTimeInterval: 2.0)
                let samples = recorder.chunks(arrivedAfter: from).flatMap(\.samples).prefix(44_100 * 2 * 2)
                engine.stop()
                Thread.sleep(forTimeInterval: 0.25)
                guard let lufs = try Self.loudness(Array(samples)) else { continue }
                if normalized { after.append(lufs) } else { before.append(lufs) }
            }
        }
        func spread(_ values: [Double]) -> Double { (values.max() ?? 0) - (values.min() ?? 0) }
        report.add(Row("loudness: the 20 previews at the monitor, Sound Check off (2 s of each)", unit: "LUFS", values: before,
                       note: String(format: "spread %.1f LU", spread(before))))
        report.add(Row("loudness: the same with Sound Check (track)", unit: "LUFS", values: after,
                       note: String(format: "spread %.1f LU; target −18", spread(after))))
    }

    /// Integrated loudness of interleaved stereo 16-bit samples, measured as a file is.
    private static func loudness(_ samples: [Int16]) throws -> Double? {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-bench-loudness-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: url) }
        try Fixtures.write(url, samples.map { Float($0) / 32_768 })
        return try LoudnessMeter.measure(path: url.path)?.integratedLUFS
    }
}
