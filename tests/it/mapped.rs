//! Tensors that view a memory-mapped file (`model::mapped`), with the binary's allocator
//! installed in this test binary: values read in place, fused projections as views of
//! adjacent parts, a copy when parts are not adjacent, growth moving a `Vec` to the heap,
//! writes staying out of the file, and the file unmapped once nothing views it.

use candle_core::Tensor;
use codescope::model::mapped::{self, cat_rows, Mapping};

fn ptr(t: &Tensor) -> usize {
    let (s, _) = t.storage_and_layout();
    match &*s {
        candle_core::Storage::Cpu(candle_core::CpuStorage::F32(v)) => v.as_ptr() as usize,
        _ => panic!("not a CPU f32 tensor"),
    }
}

#[test]
fn mapped_tensors_view_the_file_and_release_it() {
    assert!(
        mapped::available(),
        "the test binary installs mapped::Alloc"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.bin");
    // 8 header bytes, then 24 f32: 0.5, 1.5, ...
    let values: Vec<f32> = (0..24).map(|i| i as f32 + 0.5).collect();
    let mut bytes = vec![7u8; 8];
    for v in &values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let before = mapped::live_mappings();

    let map = Mapping::open(&path).unwrap();
    assert_eq!(mapped::live_mappings(), before + 1);
    // Three [2, 2] parts back to back, then one more after a gap of 4 values.
    let q = map.tensor(8, 4, (2, 2)).unwrap();
    let k = map.tensor(8 + 16, 4, (2, 2)).unwrap();
    let v = map.tensor(8 + 32, 4, (2, 2)).unwrap();
    let far = map.tensor(8 + 64, 4, (2, 2)).unwrap();
    assert_eq!(q.to_vec2::<f32>().unwrap(), [[0.5, 1.5], [2.5, 3.5]]);
    assert_eq!(ptr(&q), map.bytes().as_ptr() as usize + 8, "no copy");

    let fused = cat_rows(&[q.clone(), k.clone(), v.clone()]).unwrap();
    assert_eq!(fused.dims(), [6, 2]);
    assert_eq!(ptr(&fused), ptr(&q), "adjacent parts: a view");
    let copied = Tensor::cat(&[&q, &k, &v], 0).unwrap();
    assert_eq!(
        fused.to_vec2::<f32>().unwrap(),
        copied.to_vec2::<f32>().unwrap()
    );
    let gap = cat_rows(&[q.clone(), far.clone()]).unwrap();
    assert_ne!(ptr(&gap), ptr(&q), "parts apart: a copy");
    assert_eq!(
        gap.to_vec2::<f32>().unwrap(),
        [[0.5, 1.5], [2.5, 3.5], [16.5, 17.5], [18.5, 19.5]]
    );
    // Transposed use, as the projections take them.
    let t = fused.t().unwrap().contiguous().unwrap();
    assert_eq!(t.dims(), [2, 6]);

    // A Vec over the map: written (copy-on-write) and grown (moved to the heap).
    let mut raw = map.values(8 + 80, 4).unwrap();
    raw[0] = -1.0;
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the file is never written"
    );
    raw.push(99.0);
    assert_eq!(raw, [-1.0, 21.5, 22.5, 23.5, 99.0]);
    drop(raw);
    assert!(map.values(2, 1).is_err(), "misaligned");
    assert!(map.values(8, 25).is_err(), "past the end");

    // The handle goes first; the tensors keep the file mapped until the last one goes.
    drop(map);
    assert_eq!(mapped::live_mappings(), before + 1);
    drop((q, k, v, far, fused, gap, copied, t));
    assert_eq!(
        mapped::live_mappings(),
        before,
        "unmapped with its last view"
    );
}
