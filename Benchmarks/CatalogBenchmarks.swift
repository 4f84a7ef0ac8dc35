import PlatformSupport
import AudioEngine
import AudioMeasurement
import Foundation
import MusicKitCore
import Synchronization

/// A generated catalog of many songs: import time, search latency (median and p95 over fixed
/// terms), a 300-ID resource request, memory; and the same queries through the `sqlite3`
/// shell on the same database as the floor.
struct CatalogBenchmarks {
    let songCount: Int
    let runs: Int
    let report: Report

    /// Deterministic pseudo-random numbers (SplitMix64), so every run generates the same catalog
    /// (and the fuzzing run the same mutants).
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let syllables = ["ka", "lo", "ri", "ven", "tor", "mi", "sa", "del", "ne", "qua", "zor", "pha", "lin", "ost",
                            "ur", "bel", "cra", "dun", "ei", "fa", "gri", "hol", "ix", "jun", "ky", "mur", "nor", "pel"]

    /// Words of two or three syllables; titles draw from them with a skewed (Zipf-like) choice.
    static func words(_ count: Int, _ random: inout Generator) -> [String] {
        var seen = Set<String>()
        var words: [String] = []
        while words.count < count {
            let parts = (0..<Int.random(in: 2...3, using: &random)).map { _ in syllables.randomElement(using: &random)! }
            let word = parts.joined()
            if seen.insert(word).inserted { words.append(word) }
        }
        return words
    }

    static func skewed(_ count: Int, _ random: inout Generator) -> Int {
        // The square of a uniform number favours small indices: common words stay common.
        let u = Double(random.next() % 1_000_000) / 1_000_000
        return min(count - 1, Int(u * u * Double(count)))
    }

    /// Writes `songCount` songs in files of 10,000 into `directory/Catalog/us`.
    func generate(into directory: URL) throws -> (words: [String], artists: [String]) {
        var random = Generator(state: 2026)
        let words = Self.words(8_000, &random)
        let artists = (0..<20_000).map { _ in
            (0..<2).map { _ in words[Self.skewed(words.count, &random)].capitalized }.joined(separator: " ")
        }
        let folder = directory.appendingPathComponent("Catalog/us")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let perFile = 10_000
        for file in 0..<((songCount + perFile - 1) / perFile) {
            var text = "{\"data\":[\n"
            for index in (file * perFile)..<min(songCount, (file + 1) * perFile) {
                let title = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                    words[Self.skewed(words.count, &random)].capitalized
                }.joined(separator: " ")
                let artist = artists[Int(random.next() % UInt64(artists.count))]
                let album = words[Self.skewed(words.count, &random)].capitalized + " " + words[Int(random.next() % 8_000)].capitalized
                let id = 100_000_000 + index
                if index > file * perFile { text += ",\n" }
                text += """
                {"id":"\(id)","type":"songs","href":"/v1/catalog/us/songs/\(id)","attributes":{"name":"\(title)",\
                "artistName":"\(artist)","albumName":"\(album)","durationInMillis":\(120_000 + id % 180_000),\
                "genreNames":["Rock","Music"],"trackNumber":\(1 + id % 12),"isrc":"XXGEN\(String(format: "%07d", index))",\
                "playParams":{"id":"\(id)","kind":"song"}}}
                """
            }
            text += "\n]}\n"
            try text.write(to: folder.appendingPathComponent(String(format: "songs-%04d.json", file)), atomically: false,
                           encoding: .utf8)
        }
        return (words, artists)
    }

    func run() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-catalog-bench-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        defer { try? FileManager.default.removeItem(at: root) }
        progress("generating \(songCount) songs")
        let assets = root.appendingPathComponent("assets")
        let (words, artists) = try generate(into: assets)
        let environment = MusicKitEnvironment(root: root.appendingPathComponent("home"), assetsDirectory: assets)
        MusicKitEnvironment.current = environment

        progress("importing")
        let start = monotonicNanoseconds()
        let status = try MusicCatalogIndex.prepare(environment: environment) { update in
            if update.phase == .done { progress("  imported \(update.resourcesWritten) items") }
        }
        let importSeconds = Double(monotonicNanoseconds() - start) / 1e9
        report.add(Row("catalog import, \(songCount) songs", unit: "s", values: [importSeconds],
                       note: "documents parsed, SQLite written, FTS5 index built; \(status.documentErrors.count) errors"))
        let databaseSize = (try? FileManager.default.attributesOfItem(atPath: status.databasePath)[.size] as? Int) ?? 0
        report.add(Row("catalog database size", unit: "MB", values: [Double(databaseSize) / 1e6]))

        // Fixed terms: common and rare words, prefixes, two words, an artist.
        var random = Generator(state: 7)
        var terms: [String] = []
        for index in 0..<10 { terms.append(words[index]) }                               // the most common words
        for _ in 0..<15 { terms.append(words[1_000 + Int(random.next() % 7_000)]) }     // rarer words
        for index in 0..<10 { terms.append(String(words[20 + index * 37].prefix(3))) }  // prefixes
        for _ in 0..<10 {
            terms.append(words[Self.skewed(words.count, &random)] + " " + words[Self.skewed(words.count, &random)])
        }
        for _ in 0..<5 { terms.append(artists[Int(random.next() % UInt64(artists.count))]) }

        var latencies: [Double] = []
        var counts: [Int] = []
        for round in 0..<max(runs, 3) {
            for term in terms {
                let started = monotonicNanoseconds()
                let response = try waitFor {
                    var request = MusicCatalogSearchRequest(term: term, types: [Song.self])
                    request.limit = 25
                    return try await request.response()
                }
                if round > 0 { latencies.append(Double(monotonicNanoseconds() - started) / 1e6) }  // round 0 warms the cache
                if round == 0 { counts.append(response.songs.count) }
            }
        }
        report.add(Row("catalog search, 25 songs, \(terms.count) terms (API)", unit: "ms", values: latencies,
                       note: "p95 \(format(Summary.quantile(latencies, 0.95))) ms; terms with 25 results: \(counts.filter { $0 == 25 }.count)/\(terms.count)"))

        // A picker's search field: suggestions (with top results) for every prefix as a person
        // types ten two-word phrases, one request per keystroke.
        var phrases: [String] = []
        for _ in 0..<10 {
            phrases.append(words[Self.skewed(words.count, &random)] + " " + words[Self.skewed(words.count, &random)])
        }
        for topResults in [[], [Song.self, Album.self, Artist.self] as [any MusicCatalogSearchable.Type]] {
            var keystrokes: [Double] = []
            for round in 0..<2 {
                for phrase in phrases {
                    for length in 1...phrase.count {
                        let typed = String(phrase.prefix(length))
                        let started = monotonicNanoseconds()
                        _ = try waitFor {
                            var request = MusicCatalogSearchSuggestionsRequest(term: typed, includingTopResultsOfTypes: topResults)
                            request.limit = 10
                            return try await request.response()
                        }
                        if round > 0 { keystrokes.append(Double(monotonicNanoseconds() - started) / 1e6) }  // round 0 warms the cache
                    }
                }
            }
            report.add(Row("catalog search suggestions per keystroke" + (topResults.isEmpty ? ", terms only" : "") + " (API)",
                           unit: "ms", values: keystrokes,
                           note: "p95 \(format(Summary.quantile(keystrokes, 0.95))) ms (goal: under 5 ms); \(keystrokes.count) keystrokes typing 10 "
                               + "two-word phrases; 10 suggestions" + (topResults.isEmpty ? "" : " with top songs, albums and artists")))
        }

        var resourceLatencies: [Double] = []
        for _ in 0..<runs {
            let ids = (0..<300).map { _ in MusicItemID(String(100_000_000 + Int(random.next() % UInt64(songCount)))) }
            let started = monotonicNanoseconds()
            let response = try waitFor { try await MusicCatalogResourceRequest<Song>(matching: \.id, memberOf: ids).response() }
            resourceLatencies.append(Double(monotonicNanoseconds() - started) / 1e6)
            precondition(response.items.count == Set(ids).count, "every generated ID is found")
        }
        report.add(Row("catalog resource request, 300 IDs (API)", unit: "ms", values: resourceLatencies))
        report.add(Row("memory: peak resident set of this process", unit: "MB", values: [Double(Self.peakResidentKilobytes()) / 1024],
                       note: "after import and queries"))

        try sqliteFloor(database: status.databasePath, terms: terms)
    }

    /// The same search SQL through the `sqlite3` shell (`.timer on`): the database's own time.
    func sqliteFloor(database: String, terms: [String]) throws {
        guard let shell = PeerBenchmarks.installed("sqlite3") else {
            report.add(Row("sqlite3 shell, same search SQL (floor)", unit: "ms", values: [], note: "sqlite3 not installed"))
            return
        }
        // The store's tiered queries (CatalogStore.search), all three tiers per term: an upper
        // bound of the SQL work the API does (it stops once a tier fills the page).
        var script = ".timer on\n"
        for _ in 0..<max(runs, 3) {
            for term in terms {
                let words = term.lowercased().split(separator: " ").map { "\"\($0)\"*" }.joined(separator: " ")
                for match in ["{name} : (\(words))", "{artist} : (\(words))", words] {
                    script += "SELECT r.rowid, r.json FROM search JOIN resources r ON r.rowid = search.rowid WHERE search MATCH '"
                        + match + "' AND r.storefront = 'us' AND r.type = 'songs' ORDER BY search.rowid LIMIT 26;\n"
                }
            }
        }
        // Script and output through files: the rows are large, and a pipe would fill up.
        let scriptURL = URL(fileURLWithPath: database + ".floor.sql")
        let outputURL = URL(fileURLWithPath: database + ".floor.out")
        try script.write(to: scriptURL, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let process = Process()
        process.executableURL = shell
        process.arguments = ["-readonly", database]
        process.standardInput = try FileHandle(forReadingFrom: scriptURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        try process.run()
        process.waitUntilExit()
        let text = try String(contentsOf: outputURL, encoding: .utf8)
        // "Run Time: real 0.001 user 0.000812 sys 0.000000": real has millisecond resolution,
        // so the CPU time (user + sys, microseconds) is the floor of each statement.
        let times = text.split(separator: "\n").compactMap { line -> Double? in
            guard line.hasPrefix("Run Time: real ") else { return nil }
            let fields = line.split(separator: " ")
            guard let user = fields.firstIndex(of: "user").flatMap({ Double(fields[$0 + 1]) }),
                  let sys = fields.firstIndex(of: "sys").flatMap({ Double(fields[$0 + 1]) }) else { return nil }
            return (user + sys) * 1000
        }
        // Three statements per term; the first round warms the cache.
        var perTerm: [Double] = []
        var index = 0
        while index + 2 < times.count {
            let sum: Double = times[index] + times[index + 1] + times[index + 2]
            perTerm.append(sum)
            index += 3
        }
        let measured = Array(perTerm.dropFirst(terms.count))
        report.add(Row("sqlite3 shell, the same search SQL, all tiers (floor)", unit: "ms", values: measured,
                       note: "p95 \(format(Summary.quantile(measured, 0.95))) ms"))
    }

    static func peakResidentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}

