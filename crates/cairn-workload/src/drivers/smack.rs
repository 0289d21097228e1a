//! The super-smack driver: its `select_index` test (select-key.smack) over its `http_auth` dataset, MySQL's protocol only.

use super::{mysql_protocol_only, Driver, Loadable, Runnable};
use crate::smack::{
    load_smack, run_select_index_until, smack_outcome, DictionaryOrder, SmackDataset, SmackSpec,
};
use crate::workload::{
    Dataset, LoadReport, Outcome, Params, RunContext, WorkloadDef, MAX_CLIENTS, MAX_LOAD_PARALLEL,
};
use crate::{Error, Protocol, Target};

pub struct Smack;

impl Driver for Smack {
    fn name(&self) -> &'static str {
        "smack"
    }

    fn dataset(&self, p: &mut Params<'_>) -> Result<Box<dyn Loadable>, Error> {
        // uid is a signed INTEGER holding the row number
        let mut s = SmackDataset::new(p.u32_within(
            "rows",
            crate::smack::dataset::DEFAULT_ROWS,
            1,
            i32::MAX as u32,
        )?);
        // every dictionary word is a username: at most one a row
        if p.has("words") {
            let words = p.u32_within("words", 1, 1, u32::MAX)?;
            if words > s.rows {
                return Err(p.error(
                    "words",
                    format!(
                        "dataset parameter `words` ({words}) cannot exceed `rows` ({}): every word is a username",
                        s.rows
                    ),
                ));
            }
            s.words = Some(words);
        }
        s.file_size_equiv = p.u64("file-size-equiv", s.file_size_equiv)?;
        if p.has("engine") {
            s.engine = Some(p.identifier("engine", "")?);
        }
        s.seed = p.u64("seed", 0)?;
        s.parallel = p.u32_within("parallel", 4, 1, MAX_LOAD_PARALLEL)?;
        s.validate()?;
        Ok(Box::new(s))
    }

    fn workload(
        &self,
        def: &WorkloadDef,
        dataset: Option<&Dataset>,
        seed: u64,
        p: &mut Params<'_>,
    ) -> Result<Box<dyn Runnable>, Error> {
        if def.test != "select_index" {
            return Err(Error::Invalid(format!(
                "smack test `{}` is not supported: use select_index",
                def.test
            )));
        }
        let Some(ds) = dataset.and_then(Dataset::spec::<SmackDataset>) else {
            return Err(Error::Invalid(
                "smack `select_index` needs a smack dataset (`dataset \"…\" { smack rows=… }`)"
                    .into(),
            ));
        };
        let mut s = SmackSpec::new(
            ds.clone(),
            p.u32_within("clients", 10, 1, MAX_CLIENTS)?,
            p.u64("rounds", 1000)?,
        );
        s.report_interval = p.positive_duration("report-interval", 1.0)?;
        s.seed = seed;
        let mut d = Params::new("driver", &def.driver_props);
        s.queries_per_round = d.u32_within("queries-per-round", 2, 1, u32::MAX)?;
        s.dictionary = match d.choice("dictionary", &["rand", "seq"], "rand")? {
            "seq" => DictionaryOrder::Seq,
            _ => DictionaryOrder::Rand,
        };
        d.finish()?;
        // what the driver checks again before it runs
        s.validate()?;
        Ok(Box::new(s))
    }
}

impl Loadable for SmackDataset {
    fn database(&self) -> &str {
        "smack"
    }

    fn supports(&self, protocol: Protocol) -> Result<(), Error> {
        if protocol == Protocol::Mysql {
            return Ok(());
        }
        Err(Error::Param {
            what: "dataset",
            name: "smack".into(),
            message: format!(
                "super-smack datasets need a MariaDB or MySQL server, not a {} one: super-smack speaks only MySQL's protocol",
                protocol.as_str()
            ),
        })
    }

    fn load(&self, target: &Target) -> Result<LoadReport, Error> {
        let r = load_smack(target, self)?;
        Ok(super::load_report(r.elapsed_s, r.rows, &r))
    }
}

/// Ends after its rounds, not on the clock.
impl Runnable for SmackSpec {
    fn run(&self, cx: &RunContext<'_>) -> Result<Outcome, Error> {
        let r = run_select_index_until(cx.target, self, cx.stop)?;
        Ok(smack_outcome(&r))
    }

    fn supports(&self, protocol: Protocol) -> Result<(), Error> {
        mysql_protocol_only("smack", protocol)
    }
}
