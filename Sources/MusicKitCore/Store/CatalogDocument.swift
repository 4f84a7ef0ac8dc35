import Foundation

/// A catalog document could not be used: which file, where in it, and what is wrong.
/// (Linux addition)
public struct CatalogDocumentError: Error, CustomStringConvertible, Sendable, Equatable {
    public let file: String
    /// e.g. `data[3].attributes.durationInMillis`.
    public let jsonPath: String
    public let reason: String

    public var description: String { "\(file): \(jsonPath): \(reason)" }
}

/// What one catalog document holds, flattened: resources (related resources included inline
/// become resources of their own), charts and equivalence groups.
///
/// Accepted shapes: Apple Music API responses (`{"data": [...]}`, `{"results": {...}}` of a search
/// or of charts), a bare resource or array of resources, and this project's
/// `{"equivalents": [...]}` (see `Assets/Catalog/README.md`). A document's storefront is its
/// top-level `"storefront"`, else its folder's name when that is a storefront code (`us/`), else
/// the storefront in its resources' `href`s, else `us`.
struct CatalogDocument {
    struct Chart {
        var type: String
        var chart: String
        var name: String
        var ids: [String]
    }

    var storefront: String
    var resources: [ResourceObject] = []
    /// Where each of `resources` was found (its JSON path), in the same order.
    var resourcePaths: [String] = []
    /// What was read but not kept, or kept with a caveat, each with its JSON path: unknown
    /// resource types, numeric IDs, impossible values, resources with nothing to store.
    var notes: [CatalogDocumentError] = []
    var charts: [Chart] = []
    /// Groups of (storefront, type, id) that are the same recording or release.
    var equivalents: [[(storefront: String, type: String, id: String)]] = []

    /// Parses and validates `url`. Relative URLs in the document (previews, artwork) are
    /// resolved against its folder.
    init(url: URL) throws(CatalogDocumentError) {
        try self.init(url: url, root: CatalogDocument.readJSON(url))
    }

    /// Validates the document `root` read from `url` (see `readJSON`).
    init(url: URL, root: JSONValue) throws(CatalogDocumentError) {
        let file = url.path
        let folder = url.deletingLastPathComponent()
        let folderName = folder.lastPathComponent
        storefront = root["storefront"]?.string
            ?? (folderName.count == 2 && folderName == folderName.lowercased() ? folderName : nil)
            ?? CatalogDocument.storefront(inHrefOf: root)
            ?? "us"
        var parser = Parser(file: file, base: folder)
        try parser.read(root)
        resources = parser.resources
        resourcePaths = parser.resourcePaths
        notes = parser.notes
        charts = parser.charts
        equivalents = parser.equivalents.map { group in group.map { ($0.storefront ?? storefront, $0.type, $0.id) } }
    }

    private static func storefront(inHrefOf root: JSONValue) -> String? {
        var candidates: [JSONValue] = []
        if let data = root["data"]?.array { candidates += data }
        if let array = root.array { candidates += array }
        if root["href"] != nil { candidates.append(root) }
        for candidate in candidates {
            if let href = candidate["href"]?.string, href.hasPrefix("/v1/catalog/") {
                return href.split(separator: "/").dropFirst(2).first.map(String.init)
            }
        }
        return nil
    }

    static func path(of error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            return jsonPath(context.codingPath)
        @unknown default:
            return "(top level)"
        }
    }

    static func reason(of error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context): context.debugDescription
        case .keyNotFound(let key, _): "missing \"\(key.stringValue)\""
        case .typeMismatch(let type, let context): "expected \(type): \(context.debugDescription)"
        case .valueNotFound(let type, _): "expected \(type), found null"
        @unknown default: "\(error)"
        }
    }

    /// Walks a document, collecting resources with their JSON paths for errors.
    private struct Parser {
        let file: String
        let base: URL
        var resources: [ResourceObject] = []
        var resourcePaths: [String] = []
        var notes: [CatalogDocumentError] = []
        var charts: [Chart] = []
        var equivalents: [[(storefront: String?, type: String, id: String)]] = []

        /// The resource types of Apple's catalog and library that documents may hold.
        static let knownTypes: Set<String> = [
            "songs", "albums", "artists", "playlists", "stations", "music-videos", "genres", "curators",
            "apple-curators", "record-labels", "activities", "radio-shows", "storefronts", "ratings",
            "library-songs", "library-albums", "library-artists", "library-playlists", "library-music-videos",
            "uploaded-videos", "uploaded-audios"]

        init(file: String, base: URL) {
            self.file = file
            self.base = base
        }

        func fail(_ path: String, _ reason: String) -> CatalogDocumentError {
            CatalogDocumentError(file: file, jsonPath: path, reason: reason)
        }

        mutating func read(_ root: JSONValue) throws(CatalogDocumentError) {
            if let array = root.array {
                for (index, value) in array.enumerated() { _ = try resource(value, at: "[\(index)]") }
                return
            }
            guard let object = root.object else { throw fail("(top level)", "expected an object or an array") }
            var recognized = false
            if let data = object["data"] {
                recognized = true
                guard let array = data.array else { throw fail("data", "expected an array of resources") }
                for (index, value) in array.enumerated() { _ = try resource(value, at: "data[\(index)]") }
            }
            if let results = object["results"] {
                recognized = true
                try readResults(results)
            }
            if let groups = object["equivalents"] {
                recognized = true
                try readEquivalents(groups)
            }
            if !recognized {
                if object["id"] != nil || object["type"] != nil {
                    _ = try resource(root, at: "(top level)")
                } else {
                    throw fail("(top level)", "no \"data\", \"results\" or \"equivalents\": not a catalog document")
                }
            }
        }

        mutating func readResults(_ results: JSONValue) throws(CatalogDocumentError) {
            guard let object = results.object else { throw fail("results", "expected an object") }
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                let path = "results.\(key)"
                if let chartList = value.array {
                    // Charts: {"results": {"songs": [{"chart", "name", "data": [...]}]}}
                    for (index, chart) in chartList.enumerated() {
                        let chartPath = "\(path)[\(index)]"
                        guard let data = chart["data"]?.array else { throw fail("\(chartPath).data", "expected an array") }
                        var ids: [String] = []
                        for (itemIndex, item) in data.enumerated() {
                            ids.append(try resource(item, at: "\(chartPath).data[\(itemIndex)]").id)
                        }
                        charts.append(Chart(type: key, chart: chart["chart"]?.string ?? "most-played",
                                            name: chart["name"]?.string ?? "", ids: ids))
                    }
                } else if let data = value["data"]?.array {
                    // Search results: {"results": {"songs": {"data": [...]}}}
                    for (index, item) in data.enumerated() { _ = try resource(item, at: "\(path).data[\(index)]") }
                } else if key == "terms" || key == "suggestions" {
                    continue
                } else {
                    throw fail(path, "expected a list of charts or an object with \"data\"")
                }
            }
        }

        mutating func readEquivalents(_ groups: JSONValue) throws(CatalogDocumentError) {
            guard let array = groups.array else { throw fail("equivalents", "expected an array of groups") }
            for (index, group) in array.enumerated() {
                let path = "equivalents[\(index)]"
                guard let type = group["type"]?.string else { throw fail("\(path).type", "expected a resource type") }
                guard let members = group["members"]?.array, members.count >= 2 else {
                    throw fail("\(path).members", "expected at least two members")
                }
                var parsed: [(storefront: String?, type: String, id: String)] = []
                for (memberIndex, member) in members.enumerated() {
                    guard let id = member["id"]?.string else { throw fail("\(path).members[\(memberIndex)].id", "expected a string") }
                    parsed.append((member["storefront"]?.string, type, id))
                }
                equivalents.append(parsed)
            }
        }

        /// Validates a resource object, resolves its relative URLs, stores it (and the full
        /// resources inside its relationships and views), and returns it as stored.
        mutating func resource(_ value: JSONValue, at path: String, isReference: Bool = false) throws(CatalogDocumentError)
            -> ResourceObject {
            guard let object = value.object else { throw fail(path, "expected a resource object") }
            guard let id = object["id"]?.string ?? object["id"]?.int.map(String.init), !id.isEmpty else {
                throw fail("\(path).id", "expected a non-empty string")
            }
            if object["id"]?.string == nil {
                notes.append(fail("\(path).id", "a number, where Apple's API has a string: read as \"\(id)\""))
            }
            guard let type = object["type"]?.string, !type.isEmpty else { throw fail("\(path).type", "expected a resource type") }
            guard Parser.knownTypes.contains(type) else {
                notes.append(fail("\(path).type", "unknown resource type \"\(type)\": skipped"))
                return ResourceObject(id: id, type: type, href: nil, meta: nil)
            }
            if let duration = object["attributes"]?["durationInMillis"]?.number, duration < 0 {
                notes.append(fail("\(path).attributes.durationInMillis", "negative (\(Int(duration))): \(type.dropLast()) \(id) skipped"))
                return ResourceObject(id: id, type: type, href: nil, meta: nil)
            }
            var attributes: [String: JSONValue] = [:]
            if let value = object["attributes"] {
                guard let dictionary = value.object else { throw fail("\(path).attributes", "expected an object") }
                attributes = try validate(dictionary, type: type, at: "\(path).attributes")
            }
            var relationships: [String: ResourceObject.Relationship] = [:]
            var views: [String: ResourceObject.Relationship] = [:]
            for (field, target) in [("relationships", 0), ("views", 1)] {
                guard let value = object[field] else { continue }
                guard let dictionary = value.object else { throw fail("\(path).\(field)", "expected an object") }
                for (key, relationship) in dictionary {
                    let relationshipPath = "\(path).\(field).\(key)"
                    guard let data = relationship["data"]?.array else {
                        if relationship["href"] != nil { continue }  // a link only: nothing to store
                        throw fail("\(relationshipPath).data", "expected an array")
                    }
                    var references: [ResourceObject] = []
                    for (index, item) in data.enumerated() {
                        let related = try resource(item, at: "\(relationshipPath).data[\(index)]", isReference: true)
                        references.append(ResourceObject(id: related.id, type: related.type, href: related.href,
                                                         meta: related.meta))
                    }
                    let stored = ResourceObject.Relationship(href: relationship["href"]?.string, next: relationship["next"]?.string,
                                                             attributes: relationship["attributes"]?.object,
                                                             data: references, meta: relationship["meta"])
                    if target == 0 { relationships[key] = stored } else { views[key] = stored }
                }
            }
            let resource = ResourceObject(id: id, type: type, href: object["href"]?.string, attributes: attributes,
                                          relationships: relationships, views: views, meta: object["meta"])
            if !attributes.isEmpty || !relationships.isEmpty || !views.isEmpty {
                resources.append(resource)
                resourcePaths.append(path)
            } else if !isReference {
                notes.append(fail(path, "\(type.dropLast()) \(id) has no attributes or relationships: nothing to store"))
            }
            return resource
        }

        /// Checks the JSON types of the attributes this framework reads, and makes relative
        /// preview and artwork URLs absolute.
        func validate(_ attributes: [String: JSONValue], type: String, at path: String) throws(CatalogDocumentError)
            -> [String: JSONValue] {
            var attributes = attributes
            let strings = ["name", "artistName", "albumName", "composerName", "isrc", "upc", "url", "releaseDate",
                           "contentRating", "copyright", "recordLabel", "curatorName", "playlistType"]
            let numbers = ["durationInMillis", "trackNumber", "discNumber", "trackCount", "movementCount", "movementNumber",
                           "startTimeInMillis", "endTimeInMillis"]
            let bools = ["hasLyrics", "isCompilation", "isSingle", "isComplete", "isChart", "isLive"]
            for key in strings where attributes[key] != nil && attributes[key]?.string == nil && attributes[key] != .null {
                throw fail("\(path).\(key)", "expected a string")
            }
            for key in numbers where attributes[key] != nil && attributes[key]?.number == nil && attributes[key] != .null {
                throw fail("\(path).\(key)", "expected a number")
            }
            for key in bools where attributes[key] != nil && attributes[key]?.bool == nil && attributes[key] != .null {
                throw fail("\(path).\(key)", "expected true or false")
            }
            // Custom start and end times (26.4's `Song.startTime`/`endTime`): in the audio, in order.
            for key in ["startTimeInMillis", "endTimeInMillis"] {
                if let value = attributes[key]?.number, !(value >= 0 && value.isFinite) {
                    throw fail("\(path).\(key)", "expected milliseconds from the start, 0 or more, found \(value)")
                }
            }
            if let start = attributes["startTimeInMillis"]?.number, let end = attributes["endTimeInMillis"]?.number, end <= start {
                throw fail("\(path).endTimeInMillis", "ends at \(end) ms, not after its start at \(start) ms")
            }
            if let end = attributes["endTimeInMillis"]?.number, let duration = attributes["durationInMillis"]?.number, end > duration {
                throw fail("\(path).endTimeInMillis", "ends at \(end) ms, after the \(duration) ms of its durationInMillis")
            }
            if let rating = attributes["contentRating"]?.string, rating != "explicit" && rating != "clean" {
                throw fail("\(path).contentRating", "expected \"explicit\" or \"clean\", found \"\(rating)\"")
            }
            if let genres = attributes["genreNames"], genres.array?.allSatisfy({ $0.string != nil }) != true {
                throw fail("\(path).genreNames", "expected an array of strings")
            }
            if ["songs", "albums", "artists", "playlists", "stations", "genres", "music-videos", "curators"].contains(type),
               attributes["name"]?.string == nil {
                throw fail("\(path).name", "missing: every \(type.dropLast()) needs a name")
            }
            if let artwork = attributes["artwork"] {
                guard let template = artwork["url"]?.string else { throw fail("\(path).artwork.url", "expected a URL template") }
                if var object = artwork.object {
                    object["url"] = .string(resolve(template))
                    attributes["artwork"] = .object(object)
                }
            }
            if let previews = attributes["previews"] {
                guard let array = previews.array else { throw fail("\(path).previews", "expected an array") }
                var resolved: [JSONValue] = []
                for (index, preview) in array.enumerated() {
                    guard var object = preview.object, let url = object["url"]?.string else {
                        throw fail("\(path).previews[\(index)].url", "expected a URL")
                    }
                    object["url"] = .string(resolve(url))
                    resolved.append(.object(object))
                }
                attributes["previews"] = .array(resolved)
            }
            if let playParams = attributes["playParams"] {
                guard playParams["id"]?.string != nil, playParams["kind"]?.string != nil else {
                    throw fail("\(path).playParams", "expected an object with string \"id\" and \"kind\"")
                }
            }
            return attributes
        }

        func resolve(_ text: String) -> String { CatalogDocument.resolve(text, against: base) }
    }

    /// A URL without a scheme is a path relative to the document's folder `base` (its
    /// `#fragment` and `{w}x{h}` placeholders are kept as they are).
    static func resolve(_ text: String, against base: URL) -> String {
        if text.contains("://") { return text }
        var path = text
        var fragment = ""
        if let hash = text.firstIndex(of: "#") {
            path = String(text[..<hash])
            fragment = String(text[hash...])
        }
        let absolute = path.hasPrefix("/") ? path : base.appendingPathComponent(path).standardizedFileURL.path
        var allowed = CharacterSet.urlPathAllowed
        allowed.insert(charactersIn: "{}")
        return "file://" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + fragment
    }

    /// The JSON of the document at `url`; a file that cannot be read or is not JSON is an error
    /// naming the file (and the line and column).
    static func readJSON(_ url: URL) throws(CatalogDocumentError) -> JSONValue {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw CatalogDocumentError(file: url.path, jsonPath: "(file)", reason: "cannot be read: \(error.localizedDescription)")
        }
        do {
            return try JSONValue.parse(data)
        } catch {
            throw CatalogDocumentError(file: url.path, jsonPath: "(\(error.line):\(error.column))",
                                       reason: "not valid JSON: \(error.message)")
        }
    }

    /// The document `root`, read from a file in `base`, as JSON text whose relative URLs
    /// (every `"url"` without a scheme: previews, artwork) are absolute, for a copy kept in
    /// another folder.
    static func absolutized(_ root: JSONValue, relativeTo base: URL) -> Data {
        func walk(_ value: JSONValue) -> JSONValue {
            switch value {
            case .array(let values): return .array(values.map(walk))
            case .object(let members):
                var result: [String: JSONValue] = [:]
                for (key, member) in members {
                    if key == "url", let text = member.string, !text.isEmpty, !text.contains("://") {
                        result[key] = .string(resolve(text, against: base))
                    } else {
                        result[key] = walk(member)
                    }
                }
                return .object(result)
            default: return value
            }
        }
        return Data(walk(root).serialized.utf8)
    }
}
