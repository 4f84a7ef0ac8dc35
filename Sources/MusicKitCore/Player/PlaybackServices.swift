import AudioEngine
import Foundation
import Synchronization

/// Everything a player asks of the world outside its queue, in one place:
///
/// - **containers**: how many tracks an album or a playlist has and a page of them (the catalog
///   database; tracks held as identifiers only are looked up with their storefront equivalents);
/// - **sources**: which file an entry plays, or why it cannot (the rule that catalog content
///   needs an authorized app and a subscription, decided once per session: `SessionCatalogAccess`);
/// - **history**: adding what was heard to the listening history (the player calls it from a
///   listener on its own events, off the engine's and the event threads).
///
/// The queue, its contents and the provider the engine asks are order and storage only: they
/// call these answers and never open a store. Each player is given one at init
/// (`ApplicationMusicPlayer`; the system player reuses the type).
///
/// Thread safety: any thread. Stores are opened per call from `MusicKitEnvironment.current`
/// (a container's pages from the environment it was made in).
final class PlaybackServices: Sendable {
    private let historyQueue = DispatchQueue(label: "musickit.player.history")
    /// Plays waiting for the history's queue; a write is scheduled while there are any.
    private let pendingPlays = Mutex<[PendingPlay]>([])

    init() {}

    // MARK: - Containers

    /// An album's or a playlist's tracks, to be loaded a page at a time: the catalog database's
    /// when it has the container (a library container added from the catalog points at it),
    /// otherwise the tracks the container holds. When the database cannot say how many there
    /// are, the container is one entry that fails with the reason.
    static func tracks(of container: ResourceObject, environment: MusicKitEnvironment = .current) -> ContainerTracks {
        let held = container.relationships["tracks"]?.data ?? []
        let catalog = container.type.hasPrefix("library-") ? container.relationships["catalog"]?.data.first : container
        guard let catalog else { return heldTracks(held, of: container, environment: environment) }
        let counted: Int
        do {
            counted = try MusicCatalogService.open(environment).trackCount(of: catalog)
        } catch {
            let reason = "the tracks of \(describe(container)) could not be counted in the catalog database: \(error)"
            return ContainerTracks(container: container, count: 1) { _ in throw ContainerTracks.LoadError(reason: reason) }
        }
        guard counted > 0 else { return heldTracks(held, of: container, environment: environment) }
        return ContainerTracks(container: container, count: counted) { range in
            do {
                return try MusicCatalogService.open(environment).tracks(of: catalog, range: range)
            } catch {
                throw ContainerTracks.LoadError(reason: "tracks \(range.lowerBound + 1)–\(range.upperBound) of "
                                                + "\(describe(container)) could not be read from the catalog database: \(error)")
            }
        }
    }

    /// Tracks the container holds; those held as identifiers only are looked up in the catalog
    /// (with storefront equivalents), a page at a time.
    private static func heldTracks(_ held: [ResourceObject], of container: ResourceObject,
                                   environment: MusicKitEnvironment) -> ContainerTracks {
        ContainerTracks(container: container, count: held.count) { range in
            let page = Array(held[range.clamped(to: held.indices)])
            let missing = page.filter(\.isIdentifierOnly)
            guard !missing.isEmpty else { return page }
            var found: [String: ResourceObject] = [:]
            do {
                let service = try MusicCatalogService.open(environment)
                let account = AccountStore.load(environment).account
                for type in Set(missing.map(\.type)) {
                    let ids = missing.filter { $0.type == type }.map(\.id)
                    for (requested, resource) in try service.resources(type: type, ids: ids, findEquivalents: true, account: account) {
                        found[type + "/" + requested] = resource
                    }
                }
            } catch {
                throw ContainerTracks.LoadError(reason: "tracks \(range.lowerBound + 1)–\(range.upperBound) of "
                                                + "\(describe(container)) could not be looked up in the catalog: \(error)")
            }
            // Identifiers the catalog does not have stay as they are: they fail as "not in the catalog".
            return page.map { found[$0.type + "/" + $0.id] ?? $0 }
        }
    }

    private static func describe(_ resource: ResourceObject) -> String {
        resource.string("name").map { "“\($0)”" } ?? "\(resource.type) \(resource.id)"
    }

    // MARK: - Sources

    /// Whether catalog content plays in a session: decided when it starts, or at its first
    /// catalog entry (`SessionCatalogAccess`).
    enum CatalogAccess: Sendable, Equatable {
        case allowed
        case denied(reason: String)
    }

    /// A session's access: decided when it starts (it starts on catalog content, which needs
    /// it), or left to be decided when its first catalog entry comes — a session that starts on a
    /// file or a library song reads no account before its first sound (~0.25 ms of a play
    /// command's start), nor the environment it would be read in (~0.3 ms its first time), and
    /// one that never meets catalog content reads neither.
    final class SessionCatalogAccess: Sendable {
        private enum State {
            case decided(CatalogAccess)
            case undecided(decide: @Sendable () -> CatalogAccess)
        }

        private let state: Mutex<State>

        private init(_ state: State) {
            self.state = Mutex(state)
        }

        static func decided(_ access: CatalogAccess) -> SessionCatalogAccess {
            SessionCatalogAccess(.decided(access))
        }

        /// Decided from `environment`'s account the first time it is read (the environment
        /// too is read only then): what `catalogAccess(in:)` says, or why the app may not play
        /// catalog content.
        static func whenNeeded(in environment: @autoclosure @escaping @Sendable () -> MusicKitEnvironment) -> SessionCatalogAccess {
            SessionCatalogAccess(.undecided {
                do {
                    return try PlaybackServices.catalogAccess(in: environment())
                } catch {
                    // Library songs play without authorization; catalog entries say why they do not.
                    return .denied(reason: "the app may not play it (\(error))")
                }
            })
        }

        /// The access, deciding it (once) when it was left for later.
        var value: CatalogAccess {
            state.withLock { state in
                switch state {
                case .decided(let access):
                    return access
                case .undecided(let decide):
                    let access = decide()
                    state = .decided(access)
                    return access
                }
            }
        }
    }

    /// What `MusicSubscription.current` says in `environment`, now. Throws what it throws (an
    /// app that is not authorized: `MusicSubscription.Error.permissionDenied`).
    static func catalogAccess(in environment: MusicKitEnvironment) throws -> CatalogAccess {
        let subscription = try MusicSubscription.read(from: environment)
        return subscription.canPlayCatalogContent ? .allowed
            : .denied(reason: "this account cannot play it (no subscription: MusicSubscription.canPlayCatalogContent is false)")
    }

    /// Whether an entry is Apple Music catalog content (it needs a subscription to play),
    /// rather than a file in the person's library.
    static func isCatalogContent(_ resource: ResourceObject) -> Bool {
        resource.string("filePath") == nil
    }

    /// The file an entry plays, or why it cannot. `access` is read only for catalog content (the
    /// provider has it decided before, outside its mutex: `SessionCatalogAccess`). A preview on
    /// the network plays from the preview cache, its download started here when it is not there
    /// (`PreviewCache`).
    static func source(of entry: MusicPlayer.Queue.Entry, catalogAccess access: @autoclosure () -> CatalogAccess) -> AudioEntry.Source {
        if let reason = entry.unavailableReason { return .unplayable(reason: reason) }
        let resource = entry.resource
        if let path = resource.string("filePath") { return .file(path: path) }
        let title = resource.string("name").map { "“\($0)”" } ?? "catalog item \(resource.id)"
        if case .denied(let reason) = access() {
            return .unplayable(reason: "\(title) is Apple Music catalog content and \(reason)")
        }
        guard let url = resource.previewAssets?.first?.url else {
            return .unplayable(reason: resource.isIdentifierOnly ? "\(title) is not in the catalog"
                               : "the catalog has no audio for \(title)")
        }
        if url.isFileURL { return .file(path: url.path) }
        guard ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            return .unplayable(reason: "the audio of \(title) is at \(url.absoluteString), which cannot be fetched")
        }
        // A preview on the network: from the preview cache, or downloading while it plays.
        do {
            return .file(path: try PreviewCache.file(for: url))
        } catch {
            return .unplayable(reason: "the preview of \(title) cannot be kept: \(error)")
        }
    }

    /// The audio variant a file gives: lossless for FLAC, WAV, AIFF and ALAC, lossy stereo
    /// otherwise (an MP4 file is opened to tell ALAC from AAC).
    static func audioVariant(of source: AudioEntry.Source) -> AudioVariant? {
        guard case .file(let path) = source else { return nil }
        let fileExtension = (path as NSString).pathExtension.lowercased()
        if ["m4a", "m4b", "mp4"].contains(fileExtension) {
            return (try? AudioFileDecoder.info(path: path))?.formatName.contains("ALAC") == true ? .lossless : .lossyStereo
        }
        return AudioFileDecoder.losslessFileExtensions.contains(fileExtension) ? .lossless : .lossyStereo
    }

    // MARK: - History

    /// Adds `entry` to the listening history unless the person switched "Use Listening
    /// History" off, on the history's own queue; `failed` is called with the reason when the
    /// library cannot take it. Plays that come while a write is pending go with it, in one
    /// transaction (a device without a clock goes round a short song hundreds of times a
    /// second: one write each kept the process busy for minutes after it was stopped).
    func recordPlay(of entry: MusicPlayer.Queue.Entry, failed: @escaping @Sendable (String) -> Void) {
        let play = PendingPlay(played: Date(), entry: entry, environment: .current, failed: failed)
        let isFirst = pendingPlays.withLock { pending in
            pending.append(play)
            return pending.count == 1
        }
        if isFirst { historyQueue.async { self.writePendingPlays() } }
    }

    private struct PendingPlay: Sendable {
        /// When it was heard: a play waiting for a write is recorded at its own time.
        let played: Date
        let entry: MusicPlayer.Queue.Entry
        let environment: MusicKitEnvironment
        let failed: @Sendable (String) -> Void
    }

    /// On the history's queue: the plays asked for since the last write, those of one
    /// environment together.
    private func writePendingPlays() {
        let plays = pendingPlays.withLock { pending in
            defer { pending = [] }
            return pending
        }
        var start = plays.startIndex
        while start < plays.endIndex {
            let environment = plays[start].environment
            let end = plays[start...].firstIndex { $0.environment != environment } ?? plays.endIndex
            let batch = plays[start..<end]
            start = end
            guard AccountStore.load(environment).account.usesListeningHistory else { continue }
            do {
                try MusicLibraryService.open(environment).withStore { store in
                    try store.recordPlays(batch.map { play in
                        (played: play.played, resource: play.entry.resource, container: play.entry.container)
                    })
                }
            } catch {
                for play in batch { play.failed("could not record “\(play.entry.title)” in the listening history: \(error)") }
            }
        }
    }

    /// Waits until the history writes asked for so far are done.
    func waitForHistoryWrites() {
        historyQueue.sync {}
    }
}

/// An album's or a playlist's tracks as a queue holds them before they are read: how many,
/// and how to load a page (made by `PlaybackServices.tracks(of:)`). Storage only.
final class ContainerTracks: Sendable {
    /// Why a page could not be loaded; its entries fail with this reason when they are played.
    struct LoadError: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    let container: ResourceObject
    let count: Int
    private let load: @Sendable (Range<Int>) throws -> [ResourceObject]

    init(container: ResourceObject, count: Int, load: @escaping @Sendable (Range<Int>) throws -> [ResourceObject]) {
        self.container = container
        self.count = count
        self.load = load
    }

    /// Tracks `range` (positions in the container), one per position.
    func tracks(_ range: Range<Int>) throws(LoadError) -> [ResourceObject] {
        let loaded: [ResourceObject]
        do {
            loaded = try load(range)
        } catch let error as LoadError {
            throw error
        } catch {
            throw LoadError(reason: "\(error)")
        }
        guard loaded.count == range.count else {
            throw LoadError(reason: "the catalog gave \(loaded.count) tracks for positions \(range.lowerBound + 1)–"
                            + "\(range.upperBound) of “\(container.string("name") ?? container.id)” (it counted \(count))")
        }
        return loaded
    }
}
