import AudioEngine
import Dispatch
import Foundation
import Glibc
import Synchronization

/// Songs' measured loudness (`LoudnessMeter`: EBU R128), kept on disk
/// (`<data>/loudness.sqlite`) by file, so that a file without ReplayGain tags is measured once
/// and then plays normalized like a tagged one (files with ReplayGain tags are not measured:
/// their tags are kept instead, so that a later play need not read them).
/// One per data folder and process.
///
/// Measuring decodes the whole file (Benchmarks/RESULTS.md, "Sound Check"), so it is never on
/// the way to a sound: the player looks a file up when it queues it (an indexed read or two) and,
/// when it is not there yet, has it measured on a background queue for the next time it plays. A
/// changed file (size or modification time) is measured again.
///
/// Thread safety: any thread; the connection is behind a mutex.
final class LoudnessStore: Sendable {
    static let fileName = "loudness.sqlite"
    private let database: Mutex<SQLiteDatabase>
    private let queue = DispatchQueue(label: "musickit.loudness", qos: .utility)
    /// Files waiting for the background queue, so that each is measured once at a time.
    private let pending = Mutex<Set<String>>([])
    /// Files not to measure this session: they cannot be decoded, or carry ReplayGain tags.
    private let skipped = Mutex<Set<String>>([])

    private static let stores = Mutex<[URL: LoudnessStore]>([:])

    /// The store of `environment`'s data folder; nil when it cannot be opened (then nothing is
    /// measured, and untagged songs play as they are).
    static func open(_ environment: MusicKitEnvironment) -> LoudnessStore? {
        let path = environment.dataDirectory.appendingPathComponent(fileName)
        return stores.withLock { stores in
            if let store = stores[path] { return store }
            guard let store = try? LoudnessStore(path: path) else { return nil }
            stores[path] = store
            return store
        }
    }

    private init(path: URL) throws {
        // Only measurements: a broken file is replaced, and they are made again (so are those of
        // the first table, which had no album columns).
        database = Mutex(try SQLiteDatabase.openCache(at: path, schema: """
            DROP TABLE IF EXISTS loudness;
            CREATE TABLE IF NOT EXISTS measurements(path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
                                                    lufs REAL NOT NULL, peak REAL NOT NULL, album_lufs REAL, album_peak REAL);
            CREATE TABLE IF NOT EXISTS tagged(path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL,
                                              track_gain REAL, track_peak REAL, album_gain REAL, album_peak REAL);
            """))
    }

    /// The file's size and modification time (ns), nil when it is not there.
    private static func identity(_ path: String) -> (size: Int, modified: Int)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (Int(status.st_size), status.st_mtim.tv_sec * 1_000_000_000 + status.st_mtim.tv_nsec)
    }

    /// The file's measurement, if it was measured as it is now.
    func measurement(ofFile path: String) -> LoudnessMeasurement? {
        Self.identity(path).flatMap { measurement(path, $0) }
    }

    /// The measurement of the file at `path` when it had `identity`.
    private func measurement(_ path: String, _ identity: (size: Int, modified: Int)) -> LoudnessMeasurement? {
        try? database.withLock { database in
            try database.statement("SELECT lufs, peak, album_lufs, album_peak FROM measurements WHERE path = ?1 AND size = ?2 AND mtime = ?3")
                .rows([path, identity.size, identity.modified]) { row in
                    LoudnessMeasurement(integratedLUFS: row.double(0), truePeak: row.double(1),
                                        albumIntegratedLUFS: row.optionalDouble(2), albumTruePeak: row.optionalDouble(3))
                }
                .first
        }
    }

    /// The file's ReplayGain values as known without reading it: its measurement as gains, or
    /// the tags read from it before (`measureNow` keeps them), if either was made of the file as
    /// it is now; nil otherwise. One `stat` and one or two indexed reads: what the player asks as
    /// it queues an entry, so that the entry's open need not read the tags (AudioEntry.knownLoudness).
    func knownLoudness(ofFile path: String) -> LoudnessTags? {
        guard let identity = Self.identity(path) else { return nil }
        if let measured = measurement(path, identity) { return measured.replayGain }
        return try? database.withLock { database in
            try database.statement("""
                SELECT track_gain, track_peak, album_gain, album_peak FROM tagged WHERE path = ?1 AND size = ?2 AND mtime = ?3
                """).rows([path, identity.size, identity.modified]) { row in
                LoudnessTags(trackGainDB: row.optionalDouble(0), trackPeak: row.optionalDouble(1),
                             albumGainDB: row.optionalDouble(2), albumPeak: row.optionalDouble(3))
            }.first
        }
    }

    /// What a file of silence (nothing above EBU R128's gate) is kept as: nothing to normalize,
    /// and not measured again.
    private static let silence = LoudnessMeasurement(integratedLUFS: ReplayGain.referenceLUFS, truePeak: 0)

    /// Whether the file's ReplayGain tags give a gain; if so they are kept for `knownLoudness`.
    private func keepTagsIfTagged(_ path: String, _ identity: (size: Int, modified: Int)) -> Bool {
        guard let tags = AudioFileDecoder.loudnessTags(atPath: path), tags.trackGainDB != nil || tags.albumGainDB != nil else {
            return false
        }
        try? database.withLock { database in
            try database.statement("""
                INSERT OR REPLACE INTO tagged(path, size, mtime, track_gain, track_peak, album_gain, album_peak)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                """).run([path, identity.size, identity.modified, tags.trackGainDB, tags.trackPeak, tags.albumGainDB, tags.albumPeak])
        }
        return true
    }

    /// Has the file measured on the background queue unless it is being measured already (or
    /// could not be this session). `done` is called there afterwards (for tests).
    func measureSoon(_ path: String, done: (@Sendable () -> Void)? = nil) {
        guard !skipped.withLock({ $0.contains(path) }), pending.withLock({ $0.insert(path).inserted }) else { return }
        queue.async { [self] in
            defer {
                pending.withLock { _ = $0.remove(path) }
                done?()
            }
            switch measureNow(path) {
            case .tagged, .failed: skipped.withLock { _ = $0.insert(path) }  // its tags say it all, or it cannot be read
            case .measured, .known: break
            }
        }
    }

    /// How long after a catalog import its local previews start to be measured: not while the
    /// first song of the run is starting. Tests set 0.
    nonisolated(unsafe) static var importMeasuringDelaySeconds = 5.0

    /// Has `paths` measured on the background queue, one after the other as `measureSoon` does,
    /// from `importMeasuringDelaySeconds` on: a catalog import's previews, so that Sound Check
    /// plays them normalized from their first play (each ~0.1 s of one core; a process that ends
    /// first leaves the rest to be measured when they are queued).
    func measureAfterImport(_ paths: [String]) {
        guard Self.importMeasuringDelaySeconds > 0 else { return paths.forEach { measureSoon($0) } }
        queue.asyncAfter(deadline: .now() + Self.importMeasuringDelaySeconds) { [self] in
            for path in paths { measureSoon(path) }
        }
    }

    /// What `measureNow` did with a file.
    package enum Outcome: Sendable, Equatable {
        case measured, known, tagged, failed(String)
    }

    /// Measures the file here and now unless it is measured already or its ReplayGain tags say
    /// it all (then they are kept) (a library scan's `--loudness` pass).
    package func measureNow(_ path: String) -> Outcome {
        guard let before = Self.identity(path) else { return .failed("\(path): no such file") }
        if measurement(path, before) != nil { return .known }
        if keepTagsIfTagged(path, before) { return .tagged }
        let measured: LoudnessMeasurement
        do {
            measured = try LoudnessMeter.measure(path: path) ?? Self.silence
        } catch {
            return .failed(error.description)
        }
        // A file that changed while it was measured is measured again next time.
        guard let after = Self.identity(path), after == before else { return .failed("\(path) changed while it was measured") }
        store(measured, path, before)
        return .measured
    }

    /// Measures an album's files here and now, each and together (`LoudnessMeter.measureAlbum`),
    /// unless each was measured with its album already, or any carries ReplayGain tags (they
    /// say it: a tagger gives the album gain with the track gains). One outcome per file.
    package func measureAlbumNow(_ paths: [String]) -> [Outcome] {
        let before = paths.map(Self.identity)
        if let missing = paths.indices.first(where: { before[$0] == nil }) {
            return paths.indices.map { $0 == missing ? .failed("\(paths[$0]): no such file") : .failed("its album could not be measured") }
        }
        if paths.indices.allSatisfy({ measurement(paths[$0], before[$0]!)?.albumIntegratedLUFS != nil }) { return paths.map { _ in .known } }
        let tagged = paths.indices.map { keepTagsIfTagged(paths[$0], before[$0]!) }
        if tagged.contains(true) { return zip(paths, tagged).map { $1 ? .tagged : measureNow($0) } }
        let measured: (tracks: [LoudnessMeasurement?], album: LoudnessMeasurement?)
        do {
            measured = try LoudnessMeter.measureAlbum(paths: paths)
        } catch {
            return paths.map(measureNow)  // the file that cannot be read says so; the others are measured alone
        }
        let album = measured.album ?? Self.silence
        return paths.indices.map { index in
            guard let after = Self.identity(paths[index]), after == before[index]! else {
                return .failed("\(paths[index]) changed while it was measured")
            }
            var track = measured.tracks[index] ?? Self.silence
            track.albumIntegratedLUFS = album.integratedLUFS
            track.albumTruePeak = album.truePeak
            store(track, paths[index], after)
            return .measured
        }
    }

    private func store(_ measured: LoudnessMeasurement, _ path: String, _ identity: (size: Int, modified: Int)) {
        try? database.withLock { database in
            try database.statement("""
                INSERT OR REPLACE INTO measurements(path, size, mtime, lufs, peak, album_lufs, album_peak)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                """).run([path, identity.size, identity.modified, measured.integratedLUFS, measured.truePeak,
                          measured.albumIntegratedLUFS, measured.albumTruePeak])
        }
    }

    /// Waits until the files asked for so far are measured (for tests).
    func waitForMeasurements() { queue.sync {} }
}
