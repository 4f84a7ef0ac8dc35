import PlatformSupport
import AudioEngine
import AudioMeasurement
import Foundation
import MusicKitCore

/// A library folder of generated files: the first scan, a rescan with nothing changed, and
/// `MusicLibraryRequest` latency over it.
struct LibraryBenchmarks {
    let fileCount: Int
    let runs: Int
    let report: Report

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-library-bench-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        let music = root.appendingPathComponent("Music")
        progress("writing \(fileCount) tagged FLAC files")
        let samples = [Float](repeating: 0.1, count: 441 * 2)
        for index in 0..<fileCount {
            let folder = music.appendingPathComponent(String(format: "Artist %03d/Album %02d", index / 100, index / 10 % 10))
            if index % 10 == 0 { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            let writer = try AudioFileWriter(path: folder.appendingPathComponent(String(format: "%05d.flac", index)).path,
                                             format: .flac16, sampleRate: 44_100, channelCount: 2,
                                             tags: .init(title: "Song \(index)", artist: "Artist \(index / 100)",
                                                         album: "Album \(index / 10)", genre: ["Rock", "Jazz", "Pop"][index % 3],
                                                         trackNumber: index % 10 + 1))
            try writer.write(samples)
            try writer.close()
        }
        var environment = MusicKitEnvironment(root: root.appendingPathComponent("home"), assetsDirectory: nil)
        environment.applicationIdentifier = "musickit-bench"
        MusicKitEnvironment.current = environment
        try MusicAuthorizationSettings.set(.authorized, for: "musickit-bench")
        try MusicLibraryScanner.setFolders([music])

        let firstStart = monotonicNanoseconds()
        let first = try MusicLibraryScanner.scan()
        let firstSeconds = Double(monotonicNanoseconds() - firstStart) / 1e9
        report.add(Row("library first scan, \(fileCount) files", unit: "s", values: [firstSeconds],
                       note: "\(first.added) added, tags read with libsndfile and FFmpeg"))
        // What reading every file's tags through FFmpeg (album artist, disc, embedded cover: what
        // libsndfile does not read) adds to that scan: the same demuxer open, alone, per file.
        let files = FileManager.default.enumerator(atPath: music.path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".flac") }.map { music.appendingPathComponent($0).path } ?? []
        let tagStart = monotonicNanoseconds()
        for file in files { _ = AudioFileDecoder.loudnessTags(atPath: file) }
        let tagSeconds = Double(monotonicNanoseconds() - tagStart) / 1e9
        report.add(Row("  of which FFmpeg's tag read, \(files.count) files (the same open, timed alone)", unit: "s", values: [tagSeconds],
                       note: String(format: "%.3f ms a file", tagSeconds * 1_000 / Double(max(1, files.count)))))
        // Sound Check's analysis on top (`musickit library scan --loudness`): 10 files an album,
        // each album measured together. The files are 10 ms long, so this is the cost per file;
        // a real song adds its decode at ~270× realtime (the loudness group's figure).
        let loudnessStart = monotonicNanoseconds()
        let pass = try MusicLibraryScanner.measureLoudness()
        let loudnessSeconds = Double(monotonicNanoseconds() - loudnessStart) / 1e9
        precondition(pass.measured == fileCount, "every file measured: \(pass)")
        report.add(Row("library loudness pass after it (scan --loudness), \(fileCount) files in albums of 10", unit: "s",
                       values: [loudnessSeconds], note: String(format: "%.2f ms a file, 10 ms files: without their decode", loudnessSeconds * 1_000 / Double(fileCount))))
        var rescans: [Double] = []
        for _ in 0..<runs {
            let start = monotonicNanoseconds()
            let again = try MusicLibraryScanner.scan()
            rescans.append(Double(monotonicNanoseconds() - start) / 1e6)
            precondition(again.unchanged == fileCount, "nothing changed")
        }
        report.add(Row("library rescan, \(fileCount) unchanged files", unit: "ms", values: rescans))

        var textLatencies: [Double] = []
        var sortedLatencies: [Double] = []
        for run in 0..<(runs + 1) {
            var start = monotonicNanoseconds()
            let found = try waitFor { () async throws -> Int in
                var request = MusicLibraryRequest<Song>()
                request.filter(text: "Song 12")
                request.limit = 25
                return try await request.response().items.count
            }
            if run > 0 { textLatencies.append(Double(monotonicNanoseconds() - start) / 1e6) }  // run 0 builds the cache
            precondition(found > 0)
            start = monotonicNanoseconds()
            _ = try waitFor { () async throws -> Int in
                var request = MusicLibraryRequest<Song>()
                request.filter(matching: \.artistName, equalTo: "Artist 42")
                request.sort(by: \.trackNumber, ascending: true)
                return try await request.response().items.count
            }
            if run > 0 { sortedLatencies.append(Double(monotonicNanoseconds() - start) / 1e6) }
        }
        report.add(Row("MusicLibraryRequest<Song>, text filter, 25 of \(fileCount)", unit: "ms", values: textLatencies))
        report.add(Row("MusicLibraryRequest<Song>, artist filter + sort", unit: "ms", values: sortedLatencies))
    }
}
