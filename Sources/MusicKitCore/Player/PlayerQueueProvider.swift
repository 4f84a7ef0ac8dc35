import AudioEngine
import Foundation
import Synchronization

/// The player's queue as the engine sees it: which entry comes after the one the engine has,
/// decided when the engine asks (so a queue of any length costs nothing up front), with the
/// repeat and shuffle modes, jumps the player asks for, and what each entry plays (a file, or
/// why it cannot: `PlaybackServices.source(of:catalogAccess:)`, with the session's access).
///
/// Every answer gets a fresh engine token, mapped back to the queue entry: an entry repeated
/// (repeat one, repeat all) is a new token each time, so the engine's events stay unambiguous.
///
/// Order and storage only: no store is opened here. An answer is decided under the mutex
/// without loading anything; the entry is then read from the queue (which may load its page)
/// outside it, and issued under the mutex again unless the queue, the modes or a jump changed
/// in between (then it is decided again). The player's threads never wait for a page.
///
/// Thread safety: any thread (the engine's decoder thread asks; the player's threads change
/// modes and jumps).
final class PlayerQueueProvider: AudioEntryProvider, @unchecked Sendable {
    // @unchecked: the mutable state is in `state` (a Mutex); `queue` is thread-safe.

    /// One answer given to the engine.
    struct Issued: Sendable {
        let entry: MusicPlayer.Queue.Entry
        let audio: AudioEntry
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
        /// Nothing follows an entry (the player pauses after each; see
        /// `ApplicationMusicPlayer.pausesAfterEachEntry`), unless it repeats.
        var pausesAfterEachEntry = false
        /// Which ReplayGain values the entries issued from now on play at.
        var normalization: LoudnessNormalization = .off
        /// Whether catalog content plays in this session (decided by the player when it starts,
        /// or when the first catalog entry comes).
        var catalogAccess: PlaybackServices.SessionCatalogAccess = .decided(.denied(reason: "the session has not started"))
        /// Changes with everything that makes an answer decided earlier out of date.
        var generation: UInt64 = 0
    }

    private let queue: MusicPlayer.Queue
    private let state = Mutex(State())

    /// Answers kept for lookups; older ones are forgotten (a long session stays small).
    static let retainedAnswers = 1_024

    init(queue: MusicPlayer.Queue) {
        self.queue = queue
    }

    // MARK: - Control (player threads)

    /// A new engine session starts at `entryID`; catalog entries play as `catalogAccess` says.
    func reset(startingAt entryID: String?, catalogAccess: PlaybackServices.SessionCatalogAccess) {
        state.withLock { state in
            state.generation += 1
            state.catalogAccess = catalogAccess
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

    /// Entries issued from now on play at `normalization` (the ones decoded ahead are asked again).
    func setNormalization(_ normalization: LoudnessNormalization) {
        state.withLock { state in
            guard state.normalization != normalization else { return }
            state.normalization = normalization
            PlayerQueueProvider.forgetSuccessors(&state)
        }
    }

    func setModes(repeatMode: MusicPlayer.RepeatMode, shuffles: Bool, pausesAfterEachEntry: Bool = false) {
        state.withLock { state in
            if shuffles && !state.shuffles {
                // A new round: what is playing counts as played.
                let playing = state.issueOrder.last { state.started.contains($0) }
                state.shufflePlayed = playing.flatMap { state.issued[$0]?.entry.id }.map { [$0] } ?? []
            }
            state.repeatMode = repeatMode
            state.shuffles = shuffles
            state.pausesAfterEachEntry = pausesAfterEachEntry
            PlayerQueueProvider.forgetSuccessors(&state)
        }
    }

    /// Answers about what comes next are decided again; entries picked but never started
    /// are free for shuffle to pick again.
    private static func forgetSuccessors(_ state: inout State) {
        state.generation += 1
        for token in state.successor.values where !state.started.contains(token) {
            if let id = state.issued[token]?.entry.id { state.shufflePlayed.remove(id) }
        }
        state.successor.removeAll()
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

    /// Under shuffle, what follows `token`: the entry already decided for after it (the engine
    /// asks for the next one ahead of time), and how many of the queue's `count` entries this
    /// round has not played yet besides the heard one and that one. Nil when not shuffling: the
    /// queue's order is what follows.
    func shuffleAhead(of token: AudioEntry.Token?, count: Int) -> (next: MusicPlayer.Queue.Entry?, unplayed: Int)? {
        state.withLock { state in
            guard state.shuffles else { return nil }
            let next = token.flatMap { state.successor[$0.rawValue] }.flatMap { state.issued[$0]?.entry }
            // Issued entries count as played: the one heard and the one decided are not in it.
            return (next, max(0, count - state.shufflePlayed.count))
        }
    }

    // MARK: - AudioEntryProvider (engine threads)

    /// What to answer, decided under the mutex without loading anything.
    private enum Decision {
        /// An answer issued before.
        case answer(AudioEntry)
        /// Nothing (the end of the queue, or the entry asked about is unknown).
        case none
        /// The entry at `index` of `contents`, once it is read; what the answer is for.
        case issue(index: Int, contents: QueueContents, role: Role, generation: UInt64)
    }

    /// What a new answer is: the session's first entry, a jump's target, or what follows (or
    /// precedes) an issued token.
    private enum Role {
        case first
        case jump(after: UInt64)
        case successor(of: UInt64)
        case predecessor(of: UInt64)
    }

    func entry(after token: AudioEntry.Token?) -> AudioEntry? {
        answer { state in
            let (contents, currentID) = queue.snapshot
            guard let token = token?.rawValue else {
                if let first = state.firstToken, let issued = state.issued[first] { return .answer(issued.audio) }
                guard let id = state.startEntryID ?? currentID, let index = contents.index(ofEntryID: id) else { return .none }
                return .issue(index: index, contents: contents, role: .first, generation: state.generation)
            }
            // A jump answers what comes after the entry being left; what comes after the jump's
            // own answer (asked to decode ahead before it is heard) follows the queue as usual.
            if let jumpID = state.jumpEntryID, state.jumpToken != token {
                if let jumpToken = state.jumpToken, let issued = state.issued[jumpToken] {
                    link(token, jumpToken, in: &state)
                    return .answer(issued.audio)
                }
                if let index = contents.index(ofEntryID: jumpID) {
                    return .issue(index: index, contents: contents, role: .jump(after: token), generation: state.generation)
                }
                state.jumpEntryID = nil  // the entry left the queue
            }
            if let next = state.successor[token], let issued = state.issued[next] { return .answer(issued.audio) }
            guard let from = state.issued[token],
                  let index = nextIndex(after: from, contents: contents, state: &state) else { return .none }
            return .issue(index: index, contents: contents, role: .successor(of: token), generation: state.generation)
        }
    }

    var entryCount: Int? { queue.snapshot.contents.count }

    func entry(before token: AudioEntry.Token) -> AudioEntry? {
        answer { state in
            if let previous = state.predecessor[token.rawValue], let issued = state.issued[previous] { return .answer(issued.audio) }
            guard let from = state.issued[token.rawValue] else { return .none }
            let contents = queue.snapshot.contents
            guard let index = contents.index(ofEntryID: from.entry.id), index > 0 else { return .none }
            return .issue(index: index - 1, contents: contents, role: .predecessor(of: token.rawValue), generation: state.generation)
        }
    }

    func entry(withToken token: AudioEntry.Token) -> AudioEntry? {
        state.withLock { $0.issued[token.rawValue]?.audio }
    }

    /// Decides (under the mutex), reads the entry (outside it: its page may load), issues it
    /// (under the mutex) — or decides again when something changed in between.
    private func answer(_ decide: (inout State) -> Decision) -> AudioEntry? {
        while true {
            let (index, contents, role, generation): (Int, QueueContents, Role, UInt64)
            switch state.withLock({ decide(&$0) }) {
            case .answer(let audio): return audio
            case .none: return nil
            case .issue(let decidedIndex, let decidedContents, let decidedRole, let decidedGeneration):
                (index, contents, role, generation) = (decidedIndex, decidedContents, decidedRole, decidedGeneration)
            }
            let entry = contents.entry(at: index)
            if let entry, entry.unavailableReason == nil, PlaybackServices.isCatalogContent(entry.resource) {
                // Decided here, outside the mutex, when the session left it for its first catalog entry.
                _ = state.withLock { $0.catalogAccess }.value
            }
            let issued: AudioEntry?? = state.withLock { state in
                guard state.generation == generation else { return .none }  // decide again
                if let earlier = answered(role, in: state) {  // another thread issued it meanwhile
                    if case .jump(let after) = role { link(after, earlier.token.rawValue, in: &state) }
                    return earlier
                }
                guard let entry else { return .some(nil) }
                let audio = issue(entry, index: index, in: &state).audio
                switch role {
                case .first: state.firstToken = audio.token.rawValue
                case .jump(let after):
                    state.jumpToken = audio.token.rawValue
                    link(after, audio.token.rawValue, in: &state)
                case .successor(let token): link(token, audio.token.rawValue, in: &state)
                case .predecessor(let token): link(audio.token.rawValue, token, in: &state)
                }
                return audio
            }
            if let issued { return issued }
        }
    }

    /// The answer for `role` that was issued since it was decided, if one was.
    private func answered(_ role: Role, in state: State) -> AudioEntry? {
        let token: UInt64? = switch role {
        case .first: state.firstToken
        case .jump: state.jumpToken
        case .successor(let from): state.successor[from]
        case .predecessor(let to): state.predecessor[to]
        }
        return token.flatMap { state.issued[$0]?.audio }
    }

    // MARK: - Deciding

    private func nextIndex(after from: Issued, contents: QueueContents, state: inout State) -> Int? {
        let count = contents.count
        guard count > 0 else { return nil }
        // Where the entry is now; a removed entry's place is taken by what followed it.
        let position = contents.index(ofEntryID: from.entry.id)
        if state.repeatMode == .one, let position { return position }
        if state.pausesAfterEachEntry { return nil }
        if state.shuffles { return shuffledIndex(count: count, contents: contents, state: &state) }
        let next = position.map { $0 + 1 } ?? min(from.index, count)
        if next < count { return next }
        return state.repeatMode == .all ? 0 : nil
    }

    /// A random entry not played in this round; a new round when all were (repeat all).
    private func shuffledIndex(count: Int, contents: QueueContents, state: inout State) -> Int? {
        // An entry not loaded yet was never issued: it is unplayed (nothing is loaded here).
        func unplayed(_ index: Int) -> Bool {
            contents.loadedEntry(at: index).map { !state.shufflePlayed.contains($0.id) } ?? true
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
        return picked  // counted as played when it is issued
    }

    private func issue(_ entry: MusicPlayer.Queue.Entry, index: Int, in state: inout State) -> Issued {
        let token = state.nextToken
        state.nextToken += 1
        if state.shuffles { state.shufflePlayed.insert(entry.id) }
        var audio = AudioEntry(token: .init(rawValue: token),
                               source: PlaybackServices.source(of: entry, catalogAccess: state.catalogAccess.value),
                               startTime: entry.playedStartTime, endTime: entry.playedEndTime,
                               normalization: state.normalization)
        // The store of the environment in effect now (a long-lived player outlives environments
        // in tests; an app has one), where untagged files' measured loudness is kept.
        if state.normalization != .off, let path = audio.path, let store = LoudnessStore.open(.current) {
            // Known: the entry's open need not read the tags. Unknown: read at the open, and
            // the file measured (or its tags kept) in the background for next time.
            audio.knownLoudness = store.knownLoudness(ofFile: path)
            if audio.knownLoudness == nil { store.measureSoon(path) }
        }
        let issued = Issued(entry: entry, audio: audio, index: index)
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
}
