#!/usr/bin/env python3
"""Compares the MusicKit module's public declarations with Apple's MusicKit.

Reads the symbol graph of this package's MusicKit module (made by `swift package
dump-symbol-graph`) and Apple's list (API/apple-musickit-public-surface.tsv: one declaration a row,
precise identifier, kind, title, path, declaration), and prints, by type, what is present, missing
and different, with the counts. Declarations are matched by kind and path (`Song.title`); among
overloads by their declaration, normalised for what differs only by platform (module prefixes such
as `Foundation.`/`FoundationEssentials.`, attributes such as `@preconcurrency`, spacing).
SwiftUI-only declarations (the `_MusicKit_SwiftUI` module, extensions of `View`) and Combine's publishers are left out. Members the compiler
synthesises for a standard conformance (`==` and `hash(into:)` for Equatable/Hashable, Codable's
`init(from:)`/`encode(to:)`, a raw-value enum's `rawValue`, CaseIterable's `allCases`) are not in
a symbol graph made from source, though Apple's (made from its interface) lists them: they count as
present when the type has that conformance here.

It also compares the item types' conformances to Apple's item protocols (PlayableMusicItem,
MusicLibraryAddable, ...) with API/apple-musickit-conformances.tsv: a conformance Apple has that
is missing here breaks code from Apple platforms, and one Apple lacks breaks code written here.

With --check BASELINE, exits 1 when a declaration listed in BASELINE (one `kind path declaration`
a line, as --write-baseline writes it) is no longer present (the surface only grows), when a
public declaration that Apple does not have lacks "(Linux addition)" in its documentation, or
when a conformance differs from Apple's.

Usage: scripts/api_surface.py SYMBOLGRAPH_DIR [--check BASELINE] [--write-baseline FILE] [--details]
"""
import collections
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "API", "apple-musickit-public-surface.tsv")
CONFORMANCES = os.path.join(HERE, "..", "API", "apple-musickit-conformances.tsv")

MODULE_PREFIXES = re.compile(r"\b(?:FoundationEssentials|Foundation|MusicKit|Swift|_Concurrency|Observation)\.")
ATTRIBUTES = re.compile(r"@(?:preconcurrency|warn_unqualified_access|MainActor|frozen|dynamicMemberLookup|"
                        r"discardableResult|backDeployed\([^)]*\)|available\([^)]*\)|inlinable|usableFromInline|"
                        r"Sendable|_spi\([^)]*\))\s*")
KEYWORDS = re.compile(r"\b(?:nonisolated(?:\(unsafe\))?|final|dynamic|override|required|convenience|consuming|borrowing)\s+")


def normalise(declaration):
    text = ATTRIBUTES.sub("", declaration)
    text = MODULE_PREFIXES.sub("", text)
    text = KEYWORDS.sub("", text)
    text = re.sub(r"\s+", " ", text).strip()
    # A stored `let` and a get-only `var` read the same to a client.
    match = re.match(r"^((?:static |class )?)let (.*)$", text)
    if match:
        text = f"{match.group(1)}var {match.group(2)} {{ get }}"
    # `where` clauses and `any`/`some` spelling differences are kept: they are API.
    return text


def reference_rows():
    """Every row of Apple's list, as a dictionary of its columns."""
    with open(REFERENCE, encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in handle]


def apple_declarations(rows):
    """Apple's non-SwiftUI declarations as (kind, path, normalised declaration)."""
    return [(fields["kind"], fields["path"], normalise(fields["declaration"])) for fields in rows
            if not fields["precise"].startswith("s:17_MusicKit_SwiftUI") and "SwiftUI" not in fields["declaration"]
            and not fields["path"].startswith("View.") and not COMBINE.search(fields["declaration"])]


# Combine is Apple's alone (no Linux toolchain has it): its publishers are left out with SwiftUI.
COMBINE = re.compile(r"\b(?:AnyPublisher|Publishers\.|ObjectWillChangePublisher)\b")


# Members a type has because it conforms to a standard protocol: not additions to the API.
CONFORMANCE_MEMBERS = {"description", "debugDescription", "hash(into:)", "==(_:_:)", "!=(_:_:)", "<(_:_:)",
                       ">(_:_:)", "<=(_:_:)", ">=(_:_:)", "localizedDescription", "errorDescription",
                       "failureReason", "recoverySuggestion", "helpAnchor", "init(rawValue:)", "rawValue",
                       "RawValue", "init(from:)", "encode(to:)", "id", "ID", "hashValue", "allCases", "AllCases",
                       "init(_:)"}


def additions(directory, apple_paths):
    """Public declarations Apple does not have (a type counts once, not its members), with
    whether the doc comment says "(Linux addition)". Overrides, synthesized members and members
    that conformances bring are not additions."""
    found = []
    for path in [p for name in ("MusicKit", "MusicKitCore")
                 for p in glob.glob(os.path.join(directory, "**", f"{name}.symbols.json"), recursive=True)]:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        overrides = {r["source"] for r in graph.get("relationships", []) if r["kind"] == "overrides"}
        for symbol in graph.get("symbols", []):
            precise = symbol["identifier"]["precise"]
            if symbol.get("accessLevel") not in ("public", "open") or "::SYNTHESIZED::" in precise or precise in overrides:
                continue
            components = symbol.get("pathComponents", [])
            name = ".".join(components)
            if name in apple_paths or components[-1] in CONFORMANCE_MEMBERS:
                continue
            if len(components) > 1 and ".".join(components[:-1]) not in apple_paths:
                continue  # a member of an addition: the type says it
            doc = " ".join(line["text"] for line in (symbol.get("docComment") or {}).get("lines", []))
            found.append((name, "Linux addition" in doc))
    return sorted(found)


# Members the compiler synthesises for a conformance, by the protocol's precise identifier.
SYNTHESISED = {
    "s:SQ": {"==(_:_:)"},                                    # Equatable
    "s:SH": {"==(_:_:)", "hash(into:)", "hashValue"},        # Hashable
    "s:SE": {"encode(to:)"},                                 # Encodable
    "s:Se": {"init(from:)"},                                 # Decodable
    "s:SY": {"rawValue", "RawValue", "init(rawValue:)"},     # RawRepresentable
    "s:s12CaseIterableP": {"allCases", "AllCases"},          # CaseIterable
}


def our_conformances(directory):
    """The standard protocols each of our types conforms to: {type path: {protocol precise id}}."""
    conformances = collections.defaultdict(set)
    for path in glob.glob(os.path.join(directory, "**", "MusicKit*.symbols.json"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        paths = {symbol["identifier"]["precise"]: ".".join(symbol.get("pathComponents", []))
                 for symbol in graph.get("symbols", [])}
        for relationship in graph.get("relationships", []):
            if relationship["kind"] == "conformsTo" and relationship["source"] in paths:
                conformances[paths[relationship["source"]]].add(relationship["target"])
    return conformances


def conformance_differences(directory):
    """Apple's item protocols (API/apple-musickit-conformances.tsv) against this package's
    `conformsTo` relations, by the protocol's and the type's names: {protocol: (Apple's types,
    missing here, extra here)}."""
    paths, relations = {}, []
    for path in glob.glob(os.path.join(directory, "**", "MusicKit*.symbols.json"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph.get("symbols", []):
            paths[symbol["identifier"]["precise"]] = ".".join(symbol.get("pathComponents", []))
        relations += [r for r in graph.get("relationships", []) if r["kind"] == "conformsTo"]
    ours = collections.defaultdict(set)
    for relation in relations:
        source = paths.get(relation["source"])
        target = paths.get(relation["target"]) or relation.get("targetFallback", "").split(".")[-1]
        if source:
            ours[target].add(source)
    apples = collections.defaultdict(set)
    with open(CONFORMANCES, encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            protocol, conforming, _ = line.rstrip("\n").split("\t")
            apples[protocol].add(conforming)
    return {protocol: (types, types - ours[protocol], ours[protocol] - types) for protocol, types in apples.items()}


def synthesised(path, conformances):
    """Whether the compiler gives our type the member `path` names (a standard conformance's)."""
    owner, _, member = path.rpartition(".")
    return any(member in SYNTHESISED.get(protocol, ()) for protocol in conformances.get(owner, ()))


def our_declarations(directory):
    rows = []
    files = glob.glob(os.path.join(directory, "**", "MusicKit*.symbols.json"), recursive=True)
    if not files:
        sys.exit(f"no MusicKit symbol graph under {directory}")
    for path in files:
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        # The constraints a type's own generic parameters carry (not the extension's).
        inherent = {".".join(symbol.get("pathComponents", [])):
                    {(c.get("lhs"), c.get("rhs")) for c in (symbol.get("swiftGenerics") or {}).get("constraints", [])}
                    for symbol in graph.get("symbols", [])}
        for symbol in graph.get("symbols", []):
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            kind = symbol["kind"]["identifier"]
            components = symbol.get("pathComponents", [])
            declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
            # A member of a constrained extension: the fragments leave out the extension's
            # `where`, which Apple's interface prints on some members: both spellings match.
            owner = inherent.get(".".join(symbol.get("pathComponents", [])[:-1]), set())
            constraints = [c for c in (symbol.get("swiftExtension") or {}).get("constraints", [])
                           if c.get("lhs") != "Self" and (c.get("lhs"), c.get("rhs")) not in owner]
            if constraints and " where " not in declaration:
                rows.append((kind, ".".join(components), normalise(declaration + " where " + ", ".join(
                    f"{c['lhs']} {'==' if c['kind'] == 'sameType' else ':'} {c['rhs']}" for c in constraints))))
            rows.append((kind, ".".join(components), normalise(declaration)))
    return rows


def main():
    arguments = sys.argv[1:]
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if arguments else 2)
    directory = arguments[0]
    check = arguments[arguments.index("--check") + 1] if "--check" in arguments else None
    write = arguments[arguments.index("--write-baseline") + 1] if "--write-baseline" in arguments else None
    details = "--details" in arguments

    reference = reference_rows()
    apple = apple_declarations(reference)
    ours = our_declarations(directory)
    ours_by_path = collections.defaultdict(set)
    # Default implementations (declared once in a protocol extension, in terms of `Self`): the
    # symbol graph lists one overload per name on each conforming type, so look them up by name.
    defaults_by_name = collections.defaultdict(set)
    for kind, path, declaration in ours:
        ours_by_path[(kind, path)].add(declaration)
        if "Self" in declaration:
            defaults_by_name[(kind, path.split(".")[-1])].add(declaration)

    conformances = our_conformances(directory)
    present, different, missing = [], [], []
    for kind, path, declaration in apple:
        candidates = ours_by_path.get((kind, path), set())
        if "Self" in declaration and (kind, path) in ours_by_path:
            candidates = candidates | defaults_by_name.get((kind, path.split(".")[-1]), set())
        # `Self.Index` in a default implementation of Apple's is the type's own `Index` in ours.
        owner = path.split(".")[0]
        spelled = {re.sub(rf"\b{re.escape(owner)}(?:<[^>]*>)?\.", "Self.", c) for c in candidates}
        # A default implementation's `Self` is the conforming type in Apple's (`a: Song, b: Song`).
        full_owner = path.rpartition(".")[0]
        spelled |= {re.sub(r"\bSelf\b", full_owner, c) for c in candidates}
        if declaration in candidates or declaration in spelled or (not candidates and synthesised(path, conformances)):
            present.append((kind, path, declaration))
        elif candidates:
            different.append((kind, path, declaration, sorted(candidates)))
        else:
            missing.append((kind, path, declaration))

    def top(path):
        return path.split(".")[0]

    by_type = collections.defaultdict(lambda: [0, 0, 0])
    for _, path, _ in present:
        by_type[top(path)][0] += 1
    for item in different:
        by_type[top(item[1])][1] += 1
    for _, path, _ in missing:
        by_type[top(path)][2] += 1

    total = len(apple)
    print(f"Apple's MusicKit, non-SwiftUI: {total} declarations; present {len(present)} "
          f"({100 * len(present) / total:.1f}%), different {len(different)}, missing {len(missing)}")
    print()
    print(f"{'type':44} {'present':>8} {'different':>10} {'missing':>8}")
    for name in sorted(by_type, key=lambda n: (-(by_type[n][1] + by_type[n][2]), n)):
        counts = by_type[name]
        print(f"{name:44} {counts[0]:8} {counts[1]:10} {counts[2]:8}")
    if details:
        print()
        for kind, path, declaration, candidates in different:
            print(f"different  {path}  [{kind}]\n   Apple: {declaration}\n   here:  {' | '.join(candidates)}")
        for kind, path, declaration in missing:
            print(f"missing    {path}  [{kind}]  {declaration}")

    # Apple's names, the SwiftUI overlay's too (`MusicSubscriptionOffer` is here as a terminal screen).
    apple_paths = {fields["path"] for fields in reference}
    added = additions(directory, apple_paths)
    unmarked = [name for name, marked in added if not marked]
    print(f"\nLinux additions (public, not Apple's): {len(added)}; without \"(Linux addition)\" in their "
          f"documentation: {len(unmarked)}")
    if details or unmarked:
        for name, marked in added:
            print(f"  {'' if marked else 'UNMARKED '}{name}")

    differences = conformance_differences(directory)
    wrong = {protocol: found for protocol, found in differences.items() if found[1] or found[2]}
    total_conformances = sum(len(types) for types, _, _ in differences.values())
    print(f"\nConformances to Apple's {len(differences)} item protocols (API/apple-musickit-conformances.tsv): "
          f"{total_conformances} listed; protocols with a missing or an extra conforming type: {len(wrong)}")
    for protocol, (_, missing_types, extra_types) in sorted(wrong.items()):
        for name in sorted(missing_types):
            print(f"  missing: {name}: {protocol}")
        for name in sorted(extra_types):
            print(f"  extra (Apple's {name} is not {protocol}: code written here would not compile there): {name}: {protocol}")

    lines = sorted(f"{kind}\t{path}\t{declaration}" for kind, path, declaration in present)
    if write:
        with open(write, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        print(f"\nwrote {len(lines)} present declarations to {write}")
    if check:
        with open(check, encoding="utf-8") as handle:
            baseline = [line.rstrip("\n") for line in handle if line.strip()]
        now = set(lines)
        lost = [line for line in baseline if line not in now]
        if lost:
            print(f"\n{len(lost)} declaration(s) that were present are missing or changed now:")
            for line in lost:
                print("  " + line.replace("\t", "  "))
            sys.exit(1)
        if unmarked:
            print("\nevery public declaration Apple does not have says \"(Linux addition)\" in its documentation")
            sys.exit(1)
        if wrong:
            print("\nthe item types conform to exactly Apple's item protocols")
            sys.exit(1)
        print(f"\nnone of the {len(baseline)} declarations present before is missing")


if __name__ == "__main__":
    main()
