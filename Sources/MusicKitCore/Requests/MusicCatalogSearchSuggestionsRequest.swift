import Foundation

/// Suggests search terms (and, when asked, the best matching items) while a person types, from
/// the catalog of the account's storefront.
///
/// ```swift
/// let suggestions = try await MusicCatalogSearchSuggestionsRequest(term: "gap").response().suggestions
/// suggestions.first?.searchTerm   // "gapless demo"
/// ```
///
/// Terms are names of songs, albums, artists and playlists with a word that starts with each
/// word typed; those that start with the whole term come first, shorter before longer.
public struct MusicCatalogSearchSuggestionsRequest: Sendable {
    public let term: String
    /// The types the top results may have (none: no top results).
    public private(set) var typesForTopResults: [any MusicCatalogSearchable.Type]
    /// At most this many suggested terms, and as many top results (default 10).
    public var limit: Int?

    public init(term: String, includingTopResultsOfTypes types: [any MusicCatalogSearchable.Type] = []) {
        self.term = term
        typesForTopResults = types
    }

    /// The suggestions: from the Apple Music API when a developer token is configured (see
    /// `AppleMusicCatalog`), else from the embedded catalog.
    public func response() async throws -> MusicCatalogSearchSuggestionsResponse {
        let count = min(max(limit ?? 10, 1), 50)
        let keys = typesForTopResults.compactMap { ($0 as? any ResourceBackedItem.Type)?.catalogType }
        return try await catalogBackend().suggestions(term: term, types: keys, limit: count)
    }
}

/// Suggested search terms and top results.
public struct MusicCatalogSearchSuggestionsResponse: Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
    CustomDebugStringConvertible {
    public typealias TopResult = MusicCatalogSearchResponse.TopResult

    /// A term to search for.
    public struct Suggestion: Identifiable, Equatable, Hashable, Sendable, Codable, CustomStringConvertible,
        CustomDebugStringConvertible {
        public typealias ID = String
        /// What to search for (`MusicCatalogSearchRequest(term:types:)`).
        public let searchTerm: String
        /// What to show.
        public let displayTerm: String

        public var id: String { searchTerm }
        public var description: String { "Suggestion(\"\(displayTerm)\")" }
        public var debugDescription: String { "Suggestion(searchTerm: \"\(searchTerm)\", displayTerm: \"\(displayTerm)\")" }
    }

    public let suggestions: [Suggestion]
    public let topResults: MusicItemCollection<TopResult>

    init(suggestions: [Suggestion], topResults: MusicItemCollection<TopResult>) {
        self.suggestions = suggestions
        self.topResults = topResults
    }

    private enum EnvelopeKeys: String, CodingKey { case results }
    private enum ResultsKeys: String, CodingKey { case suggestions, terms }
    private enum SuggestionKeys: String, CodingKey { case kind, searchTerm, displayTerm, content }

    /// Decodes the Apple Music API's search suggestions (`{"results": {"suggestions": [{"kind":
    /// "terms", ...}, {"kind": "topResults", "content": {...}}]}}`) and its older search hints
    /// (`{"results": {"terms": ["..."]}}`).
    public init(from decoder: any Decoder) throws {
        let results = try decoder.container(keyedBy: EnvelopeKeys.self).nestedContainer(keyedBy: ResultsKeys.self, forKey: .results)
        var suggestions: [Suggestion] = []
        var topResults: [TopResult] = []
        if results.contains(.suggestions) {
            var list = try results.nestedUnkeyedContainer(forKey: .suggestions)
            while !list.isAtEnd {
                let item = try list.nestedContainer(keyedBy: SuggestionKeys.self)
                switch try item.decode(String.self, forKey: .kind) {
                case "terms":
                    let searchTerm = try item.decode(String.self, forKey: .searchTerm)
                    suggestions.append(Suggestion(searchTerm: searchTerm,
                                                  displayTerm: try item.decodeIfPresent(String.self, forKey: .displayTerm) ?? searchTerm))
                case "topResults":
                    topResults.append(try item.decode(TopResult.self, forKey: .content))
                default:
                    continue  // a kind this version does not know
                }
            }
        } else {
            suggestions = try results.decode([String].self, forKey: .terms).map { Suggestion(searchTerm: $0, displayTerm: $0) }
        }
        self.init(suggestions: suggestions, topResults: MusicItemCollection(items: topResults))
    }

    /// Encodes the Apple Music API's shape, which `init(from:)` reads back.
    public func encode(to encoder: any Encoder) throws {
        var envelope = encoder.container(keyedBy: EnvelopeKeys.self)
        var results = envelope.nestedContainer(keyedBy: ResultsKeys.self, forKey: .results)
        var list = results.nestedUnkeyedContainer(forKey: .suggestions)
        for suggestion in suggestions {
            var item = list.nestedContainer(keyedBy: SuggestionKeys.self)
            try item.encode("terms", forKey: .kind)
            try item.encode(suggestion.searchTerm, forKey: .searchTerm)
            try item.encode(suggestion.displayTerm, forKey: .displayTerm)
        }
        for result in topResults {
            var item = list.nestedContainer(keyedBy: SuggestionKeys.self)
            try item.encode("topResults", forKey: .kind)
            try item.encode(result, forKey: .content)
        }
    }

    public var description: String {
        "MusicCatalogSearchSuggestionsResponse(suggestions: \(suggestions.map(\.displayTerm)), topResults: \(topResults.count))"
    }

    public var debugDescription: String {
        "MusicCatalogSearchSuggestionsResponse(suggestions: \(suggestions.map(\.debugDescription)), topResults: \(topResults.debugDescription))"
    }
}
