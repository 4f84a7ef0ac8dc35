import AudioMeasurement
import Foundation

/// One row of the benchmark table.
struct Row {
    let name: String
    let unit: String
    let summary: Summary?
    let note: String
    /// For a start (time to first audio, skip, seek): what was heard in each run, and the
    /// landing floor it was judged by. Only intact runs give a time.
    let starts: [StartCheck]
    let landingFloor: Int

    init(_ name: String, unit: String, values: [Double], note: String = "") {
        self.name = name
        self.unit = unit
        summary = Summary(values)
        self.note = note
        starts = []
        landingFloor = 0
    }

    /// A start row in milliseconds: a run counts only when nothing was heard before the call,
    /// the heard audio is the track from its expected frame (within `landingFloor`) and no
    /// frame after that differs; the others are shown as failed.
    init(_ name: String, starts: [StartCheck], landingFloor: Int, note: String = "") {
        self.name = name
        unit = "ms"
        summary = Summary(starts.filter { $0.isIntact(landingFloor: landingFloor) }.compactMap(\.milliseconds))
        self.note = note
        self.starts = starts
        self.landingFloor = landingFloor
    }

    var isStart: Bool { !starts.isEmpty }
    var intactCount: Int { starts.filter { $0.isIntact(landingFloor: landingFloor) }.count }

    /// The integrity columns: intact runs, most frames heard before the call, landing
    /// frames (min–max), glitched frames in all runs.
    var integrityColumns: [String] {
        guard isStart else { return ["", "", "", ""] }
        let landings = starts.compactMap(\.landingFrame)
        let missing = starts.count - landings.count
        var landing = landings.isEmpty ? "–" : "+\(landings.min()!)…+\(landings.max()!)"
        if missing > 0 { landing += " (\(missing) not the track)" }
        let failed = starts.count - intactCount
        return ["\(intactCount)/\(starts.count)" + (failed > 0 ? " (**\(failed) failed**)" : ""),
                "\(starts.map(\.framesHeardBeforeCall).max() ?? 0)",
                landing,
                "\(starts.map(\.mismatchedFrames).reduce(0, +))"]
    }

    /// Each run as ms/before/landing/glitches, failed runs marked.
    var perRun: String {
        starts.map { check in
            let time = check.milliseconds.map { format($0) } ?? "no sound"
            let landing = check.landingFrame.map { "+\($0)" } ?? (check.heardTrackFrame.map { "@\($0)" } ?? "?")
            let mark = check.isIntact(landingFloor: landingFloor) ? "" : " ✗"
            return "\(time)/\(check.framesHeardBeforeCall)/\(landing)/\(check.mismatchedFrames)\(mark)"
        }.joined(separator: ", ")
    }
}

/// Collects rows and prints them as a Markdown table.
final class Report {
    private(set) var rows: [Row] = []

    func add(_ row: Row) {
        rows.append(row)
        var values = row.summary.map { "median \(format($0.median)) \(row.unit) (n=\($0.count))" } ?? "no value"
        if row.isStart {
            let columns = row.integrityColumns
            values += "; intact \(columns[0]), heard before \(columns[1]), lands \(columns[2]), glitches \(columns[3])"
        }
        FileHandle.standardError.write("  \(row.name): \(values)\(row.note.isEmpty ? "" : " — \(row.note)")\n".data(using: .utf8)!)
    }

    func median(_ name: String) -> Double? { rows.first { $0.name == name }?.summary?.median }

    func markdown() -> String {
        let withStarts = rows.contains(where: \.isStart)
        var lines: [String]
        if withStarts {
            lines = ["| measurement | median | min | max | unit | runs | intact | heard before call (frames, max) | lands at track frame | glitched frames | note |",
                     "|---|---:|---:|---:|---|---:|---|---:|---|---:|---|"]
        } else {
            lines = ["| measurement | median | min | max | unit | runs | note |", "|---|---:|---:|---:|---|---:|---|"]
        }
        for row in rows {
            let integrity = withStarts ? row.integrityColumns.map { " \($0) |" }.joined() : ""
            if let summary = row.summary {
                lines.append("| \(row.name) | \(format(summary.median)) | \(format(summary.minimum)) | \(format(summary.maximum)) | \(row.unit) | \(summary.count) |\(integrity) \(row.note) |")
            } else {
                lines.append("| \(row.name) | – | – | – | \(row.unit) | 0 |\(integrity) \(row.note) |")
            }
        }
        let starts = rows.filter(\.isStart)
        if !starts.isEmpty {
            lines.append("")
            lines.append("Each start, run by run: milliseconds / frames heard before the call / track frame where the heard "
                         + "audio begins (+N after the expected frame; @N: elsewhere in the track) / frames that differ "
                         + "from the track in the compared second; ✗ marks a failed run.")
            lines.append("")
            for row in starts { lines.append("- \(row.name): \(row.perRun)") }
        }
        return lines.joined(separator: "\n")
    }
}

func format(_ value: Double) -> String {
    if value.isNaN { return "–" }
    if abs(value) >= 1_000 { return String(format: "%.0f", value) }
    if abs(value) >= 100 { return String(format: "%.1f", value) }
    if abs(value) >= 10 { return String(format: "%.2f", value) }
    return String(format: "%.3f", value)
}

/// Progress on stderr, so stdout holds only the table.
func progress(_ text: String) {
    FileHandle.standardError.write((text + "\n").data(using: .utf8)!)
}

/// Milliseconds between two CLOCK_MONOTONIC readings.
func milliseconds(from start: UInt64, to end: UInt64) -> Double {
    Double(Int64(bitPattern: end &- start)) / 1e6
}
