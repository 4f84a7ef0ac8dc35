import AudioEngine
import Foundation
import Synchronization

/// The player's queue as the engine sees it: which entry comes after the one the engine has,
/// decided when the engine asks (so a queue of any length costs nothing up front), with the
/// repeat and shuffle modes, jumps the player asks for, and the file each entry plays.
///
/// Every answer gets a fresh engine token, mapped back to the queue entry: an entry repeated
/// (repeat one, repeat all) is a new token each time, so the engine's events stay unambiguous.
///
/// Thread safety: any thread (the engine's decoder thread asks; the player's threads change
/// modes and jumps). Everything is behind one mutex; answers may load a page of the queue
/// from the catalog database while holding it (the decoder asks ahead of time, not on the
/// audio thread).
final class PlayerQueueProvider: AudioEntryProvider, @unchecked Sendable {
    // @unchecked: the mutable state is in `state` (a Mutex); `queue` is thread-safe.

    /// One answer given to the engine.
    struct Issued: Sendable {
        let entry: MusicPlayer.Queue.Entry
        let audio: AudioEntry
        /// Why the entry cannot play, when that is known before opening a file.
        let problem: String?
        /// The queue index the entry had when it was issued (where to go on if it is removed).
        let index: Int
    }

    private struct State {
        var issued: [UInt64: Issued] = [:]
        var issueOrder: [UInt64] = []
        var successor: [UInt64: UInt64] = [:]
        var predecessor: [UInt64: UInt64] = [:]
        var firstToken: UInt64?
        var startEntryID: String?
        var nextToken: UInt64 = 1
        /// The entry to play next whatever the modes say (a jump, a skip out of repeat one).
        var jumpEntryID: String?
        var jumpToken: UInt64?
        /// Entries played (or picked to play next) in this round of shuffle.
        var shufflePlayed: Set<String> = []
        /// Answers the engine started (the others were only decoded ahead).
        var started: Set<UInt64> = []
        var repeatMode: MusicPlayer.RepeatMode = .none
        var shuffles = false
        /// Whether catalog content plays; nil: not asked yet (asked when a catalog entry comes).
        var canPlayCatalogContent: Bool?
    }

    private let queue: MusicPlayer.Queue
    private let state = Mutex(State())
    /// Answers kept for lookups; older ones are forgotten (a long session stays small).
    static let retainedAnswers = 1_024

    init(queue: MusicPlayer.Queue) {
        self.queue = queue
    }

    // MARK: - Control (player threads)

    /// A new engine session starts at `entryID`.
    func reset(startingAt entryID: String?) {
        state.withLock { state in
            state.issued.removeAll()
            state.issueOrder.removeAll()
            state.successor.removeAll()
            state.predecessor.removeAll()
            state.firstToken = nil
            state.startEntryID = entryID
            state.jumpEntryID = nil
            state.jumpToken = nil
            state.shufflePlayed = entryID.map { [$0] } ?? []
            state.started.removeAll()
        }
    }

    func setModes(repeatMode: MusicPlayer.RepeatMode, shuffles: Bool) {
        state.withLock { state in
            if shuffles && !state.shuffles {
                // A new round: what is playing counts as played.
                let playing = state.issueOrder.last { state.started.contains($0) }
                state.shufflePlayed = playing.flatMap { state.issued[$0]?.entry.id }.map { [$0] } ?? []
            }
            state.repeatMode = repeatMode
            state.shuffles = shuffles
            PlayerQueueProvider.forgetSuccessors(&state)
        }
    }

    /// Answers about what comes next are decided again; entries picked but never started
    /// are free for shuffle to pick again.
    private static func forgetSuccessors(_ state: inout State) {
        for token in state.successor.values where !state.started.contains(token) {
            if let id = state.issued[token]?.entry.id { state.shufflePlayed.remove(id) }
        }
        state.successor.removeAll()
    }

    /// Whether catalog content plays in this session; nil asks the account when the first
    /// catalog entry comes (a queue of library songs never reads it).
    func setCanPlayCatalogContent(_ allowed: Bool?) {
        state.withLock { $0.canPlayCatalogContent = allowed }
    }

    /// The app is authorized and the account subscribed (what `MusicSubscription.current`
    /// says, read without suspending: the decoder thread asks).
    static func catalogContentAllowed() -> Bool {
        MusicAuthorization.currentStatus == .authorized && AccountStore.load().account.isSubscribed
    }

    /// The queue changed: answers about what comes next are decided again.
    func queueDidChange() {
        state.withLock { PlayerQueueProvider.forgetSuccessors(&$0) }
    }

    /// The next answer to "what comes after" is `entryID`, whatever the modes say.
    func jump(to entryID: String) {
        state.withLock { state in
            state.jumpEntryID = entryID
            state.jumpToken = nil
            PlayerQueueProvider.forgetSuccessors(&state)
        }
    }

    /// The entry a jump is headed for, until the engine starts it.
    var pendingJumpEntryID: String? { state.withLock { $0.jumpEntryID } }

    /// The engine started `token`: the answer it was, and the jump is done when it was the jump.
    func started(_ token: AudioEntry.Token) -> Issued? {
        state.withLock { state in
            guard let issued = state.issued[token.rawValue] else { return nil }
            if state.jumpToken == token.rawValue {
                state.jumpEntryID = nil
                state.jumpToken = nil
            }
            state.started.insert(token.rawValue)
            return issued
        }
    }

    func issued(_ token: AudioEntry.Token) -> Issued? {
        state.withLock { $0.issued[token.rawValue] }
    }

    /// The entry played before `token` in this session (shuffle's "previous").
    func playedBefore(_ token: AudioEntry.Token) -> MusicPlayer.Queue.Entry? {
        state.withLock { state in
            state.predecessor[token.rawValue].flatMap { state.issued[$0]?.entry }
        }
    }

    // MARK: - AudioEntryProvider (engine threads)

    func entry(after token: AudioEntry.Token?) -> AudioEntry? {
        state.withLock { state -> AudioEntry? in
            let (contents, currentID) = queue.snapshot
            guard let token = token?.rawValue else {
                if let first = state.firstToken, let issued = state.issued[first] { return issued.audio }
                guard let id = state.startEntryID ?? currentID, let index = contents.index(ofEntryID: id),
                      let entry = contents.entry(at: index) else { return nil }
                let issued = issue(entry, index: index, in: &state)
                state.firstToken = issued.audio.token.rawValue
                return issued.audio
            }
            if let jumpID = state.jumpEntryID {
                if let jumpToken = state.jumpToken, let issued = state.issued[jumpToken] {
                    link(token, jumpToken, in: &state)
                    return issued.audio
                }
                if let index = contents.index(ofEntryID: jumpID), let entry = contents.entry(at: index) {
                    let issued = issue(entry, index: index, in: &state)
                    state.jumpToken = issued.audio.token.rawValue
                    link(token, issued.audio.token.rawValue, in: &state)
                    return issued.audio
                }
                state.jumpEntryID = nil  // the entry left the queue
            }
            if let next = state.successor[token], let issued = state.issued[next] { return issued.audio }
            guard let from = state.issued[token] else { return nil }
            guard let index = nextIndex(after: from, contents: contents, state: &state),
                  let entry = contents.entry(at: index) else { return nil }
            let issued = issue(entry, index: index, in: &state)
            link(token, issued.audio.token.rawValue, in: &state)
            return issued.audio
        }
    }

    func entry(before token: AudioEntry.Token) -> AudioEntry? {
        state.withLock { state -> AudioEntry? in
            if let previous = state.predecessor[token.rawValue], let issued = state.issued[previous] { return issued.audio }
            guard let from = state.issued[token.rawValue] else { return nil }
            let contents = queue.snapshot.contents
            guard let index = contents.index(ofEntryID: from.entry.id), index > 0,
                  let entry = contents.entry(at: index - 1) else { return nil }
            let issued = issue(entry, index: index - 1, in: &state)
            link(issued.audio.token.rawValue, token.rawValue, in: &state)
            return issued.audio
        }
    }

    func entry(withToken token: AudioEntry.Token) -> AudioEntry? {
        state.withLock { $0.issued[token.rawValue]?.audio }
    }

    // MARK: - Deciding

    private func nextIndex(after from: Issued, contents: QueueContents, state: inout State) -> Int? {
        let count = contents.count
        guard count > 0 else { return nil }
        // Where the entry is now; a removed entry's place is taken by what followed it.
        let position = contents.index(ofEntryID: from.entry.id)
        if state.repeatMode == .one, let position { return position }
        if state.shuffles { return shuffledIndex(count: count, contents: contents, state: &state) }
        let next = position.map { $0 + 1 } ?? min(from.index, count)
        if next < count { return next }
        return state.repeatMode == .all ? 0 : nil
    }

    /// A random entry not played in this round; a new round when all were (repeat all).
    private func shuffledIndex(count: Int, contents: QueueContents, state: inout State) -> Int? {
        func unplayed(_ index: Int) -> Bool {
            contents.entry(at: index).map { !state.shufflePlayed.contains($0.id) } ?? false
        }
        if state.shufflePlayed.count >= count {
            guard state.repeatMode == .all else { return nil }
            state.shufflePlayed.removeAll()
        }
        // Random probes find an unplayed entry at once while few were played.
        var picked: Int?
        for _ in 0..<32 {
            let index = Int.random(in: 0..<count)
            if unplayed(index) { picked = index; break }
        }
        if picked == nil {
            let start = Int.random(in: 0..<count)
            picked = (0..<count).lazy.map { (start + $0) % count }.first(where: unplayed)
        }
        if picked == nil {
            guard state.repeatMode == .all else { return nil }
            state.shufflePlayed.removeAll()
            picked = Int.random(in: 0..<count)
        }
        if let picked, let id = contents.entry(at: picked)?.id { state.shufflePlayed.insert(id) }
        return picked
    }

    private func issue(_ entry: MusicPlayer.Queue.Entry, index: Int, in state: inout State) -> Issued {
        let token = state.nextToken
        state.nextToken += 1
        if state.canPlayCatalogContent == nil && PlayerQueueProvider.isCatalogContent(entry.resource) {
            state.canPlayCatalogContent = PlayerQueueProvider.catalogContentAllowed()
        }
        let source = PlayerQueueProvider.source(of: entry.resource, canPlayCatalogContent: state.canPlayCatalogContent ?? false)
        let audio = AudioEntry(token: .init(rawValue: token), path: source.path ?? "",
                               startTime: entry.startTime, endTime: entry.endTime)
        let issued = Issued(entry: entry, audio: audio, problem: source.problem, index: index)
        state.issued[token] = issued
        state.issueOrder.append(token)
        if state.issueOrder.count > 2 * PlayerQueueProvider.retainedAnswers {
            let forgotten = state.issueOrder.prefix(PlayerQueueProvider.retainedAnswers)
            state.issueOrder.removeFirst(PlayerQueueProvider.retainedAnswers)
            for old in forgotten where old != state.firstToken && old != state.jumpToken {
                state.issued[old] = nil
                state.successor[old] = nil
                state.predecessor[old] = nil
                state.started.remove(old)
            }
        }
        return issued
    }

    private func link(_ from: UInt64, _ to: UInt64, in state: inout State) {
        state.successor[from] = to
        state.predecessor[to] = from
    }

    // MARK: - Sources

    /// Whether an entry is Apple Music catalog content (it needs a subscription to play),
    /// rather than a file in the person's library.
    static func isCatalogContent(_ resource: ResourceObject) -> Bool {
        resource.string("filePath") == nil
    }

    /// The file an entry plays, or why it cannot.
    static func source(of resource: ResourceObject, canPlayCatalogContent: Bool) -> (path: String?, problem: String?) {
        if let path = resource.string("filePath") { return (path, nil) }
        let title = resource.string("name").map { "“\($0)”" } ?? "catalog item \(resource.id)"
        guard canPlayCatalogContent else {
            return (nil, "\(title) is Apple Music catalog content and this account cannot play it "
                    + "(no subscription: MusicSubscription.canPlayCatalogContent is false)")
        }
        guard let url = resource.previewAssets?.first?.url else {
            return (nil, resource.isIdentifierOnly ? "\(title) is not in the catalog"
                         : "the catalog has no audio for \(title)")
        }
        guard url.isFileURL else { return (nil, "only local audio files play here; the audio of \(title) is at \(url.absoluteString)") }
        return (url.path, nil)
    }

    /// The audio variant a file gives: lossless for FLAC, WAV and AIFF, lossy stereo otherwise.
    static func audioVariant(ofPath path: String) -> AudioVariant {
        AudioFileDecoder.losslessFileExtensions.contains((path as NSString).pathExtension.lowercased()) ? .lossless : .lossyStereo
    }
}
