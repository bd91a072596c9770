use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "toolnexus-fs-{name}-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_staged_file_is_hidden_beside_its_target_until_committed() {
    let dir = temp_dir("stage");
    let path = dir.join("out.json");
    fs::write(&path, "old").unwrap();
    let temp = stage(&path, b"new").unwrap();
    assert_eq!(temp.parent(), path.parent());
    let shown = temp.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        shown.starts_with(".out.json.") && shown.ends_with(".tmp"),
        "{shown}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "old", "untouched");
    commit(&temp, &path).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    assert_eq!(names(&dir), ["out.json"], "no temporary file is left");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_rename_removes_the_staged_file_and_keeps_the_target() {
    let dir = temp_dir("rename");
    // A directory in the target's place: the rename fails.
    let path = dir.join("taken");
    fs::create_dir(&path).unwrap();
    fs::write(path.join("inside"), "kept").unwrap();
    let e = write_atomic(&path, b"new").unwrap_err();
    assert!(e.to_string().starts_with("cannot replace: "), "{e}");
    assert_eq!(names(&dir), ["taken"], "the staged file is gone");
    assert_eq!(fs::read_to_string(path.join("inside")).unwrap(), "kept");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_directory_is_a_write_error_that_names_the_step() {
    let dir = temp_dir("missing");
    let e = write_atomic(dir.join("no/such/dir/out.json"), b"x").unwrap_err();
    assert!(e.to_string().starts_with("cannot write: "), "{e}");
    assert_eq!(io::Error::from(e).kind(), io::ErrorKind::NotFound);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_relative_path_in_the_working_directory_stages_beside_it() {
    // `Path::parent` of a bare name is empty: the temporary file goes to `.`.
    let temp = stage("toolnexus-fs-bare-name.json", b"x").unwrap();
    assert_eq!(temp.parent(), Some(Path::new(".")));
    fs::remove_file(&temp).unwrap();
}

#[cfg(unix)]
#[test]
fn the_mode_asked_for_is_exact_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir("mode");
    let path = dir.join("settings.json");
    for mode in [0o600, 0o664, 0o755] {
        write_atomic_with(&path, b"{}", &WriteOptions::new().mode(mode)).unwrap();
        let got = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "{mode:o}");
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn appended_lines_end_in_one_newline_each() {
    let dir = temp_dir("append");
    let path = dir.join("log.jsonl");
    append_line(&path, b"{\"a\":1}").unwrap();
    append_line(&path, b"").unwrap();
    append_line(&path, b"{\"a\":2}").unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"a\":1}\n\n{\"a\":2}\n"
    );
    fs::remove_dir_all(&dir).unwrap();
}
