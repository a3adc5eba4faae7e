// SPDX-License-Identifier: Apache-2.0
package dev.ember.spark

import java.io.File
import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.util.CharVarcharUtils
import org.apache.spark.sql.types._

/** Spark's own TPC-DS schema (the spark-sql tests jar's TPCDSSchema: column
 *  types, CHAR/VARCHAR lengths, the fact tables partitioned by date key). */
object TpcdsSchema extends org.apache.spark.sql.TPCDSSchema {
  def columns: Map[String, String] = tableColumns
  def partitionColumns: Map[String, Seq[String]] = tablePartitionColumns
}

/**
 * TPC-DS tables in Spark's layout (fact tables partitioned by their date
 * key, as Spark's TPCDSBase creates them) filled by Spark itself with small
 * deterministic data, and the queries of Spark's TPC-DS suites. The data is
 * not dsdgen's: it keeps the key relationships (every foreign key names a
 * row of its dimension, returns are rows of their sales), the date range
 * 1998-2003 and the value domains the queries' literals select (categories,
 * states, genders, ...), with about 4% nulls, so that the queries' joins and
 * filters keep rows. Enough to compare Ember with Spark on every operator
 * the plans use; not a benchmark.
 */
object Tpcds {
  /** rows per table (returns are a sample of their sales) */
  private val sizes: Map[String, Long] = Map(
    "date_dim" -> 2192L, "time_dim" -> 1440L, "item" -> 600L, "customer" -> 1000L,
    "customer_address" -> 500L, "customer_demographics" -> 700L, "household_demographics" -> 720L,
    "store" -> 12L, "warehouse" -> 5L, "promotion" -> 30L, "web_site" -> 6L, "web_page" -> 60L,
    "call_center" -> 6L, "catalog_page" -> 200L, "ship_mode" -> 20L, "reason" -> 35L,
    "income_band" -> 20L, "store_sales" -> 24000L, "catalog_sales" -> 12000L, "web_sales" -> 6000L,
    "inventory" -> 8000L)

  private val returnsOf = Map("store_returns" -> "store_sales", "catalog_returns" -> "catalog_sales",
    "web_returns" -> "web_sales")

  /** foreign-key suffixes and the dimension they name */
  private val dims: Seq[(String, String)] = Seq(
    "_date_sk" -> "date_dim", "_time_sk" -> "time_dim", "_item_sk" -> "item",
    "_cdemo_sk" -> "customer_demographics", "_hdemo_sk" -> "household_demographics",
    "_addr_sk" -> "customer_address", "_customer_sk" -> "customer", "_store_sk" -> "store",
    "_promo_sk" -> "promotion", "_warehouse_sk" -> "warehouse", "_ship_mode_sk" -> "ship_mode",
    "_call_center_sk" -> "call_center", "_catalog_page_sk" -> "catalog_page",
    "_web_page_sk" -> "web_page", "_site_sk" -> "web_site", "_reason_sk" -> "reason",
    "_income_band_sk" -> "income_band", "_page_sk" -> "web_page")

  private def strs(xs: String*): Seq[String] = xs

  /** value domains of the string columns the queries select on */
  private val domains: Seq[(String, Seq[String])] = Seq(
    "i_category" -> strs("Books", "Children", "Electronics", "Home", "Jewelry", "Men", "Music", "Shoes",
      "Sports", "Women"),
    "i_class" -> strs("accessories", "classical", "fragrances", "pants", "personal", "portable", "reference",
      "self-help", "shirts", "dresses", "stereo", "pop", "computers", "football", "womens", "mens"),
    "i_brand" -> strs("amalgimporto #1", "edu packscholar #1", "exportiimporto #1", "importoamalg #1",
      "scholaramalgamalg #14", "scholaramalgamalg #7", "exportiunivamalg #9", "scholaramalgamalg #9"),
    "i_color" -> strs("slate", "blanched", "burnished", "chiffon", "smoke", "peach", "saddle", "pink",
      "midnight", "powder", "orchid", "khaki", "brown", "honeydew", "floral", "light", "navy", "lemon"),
    "i_units" -> strs("Box", "Each", "Dozen", "Ounce", "Pound", "Bunch", "Case", "Tsp", "Gross", "Cup",
      "Oz", "Ton", "Dram", "Lb", "N/A", "Carton", "Pallet", "Gram"),
    "i_size" -> strs("small", "medium", "large", "extra large", "petite", "economy", "N/A"),
    "_state" -> strs("TN", "CA", "TX", "GA", "IL", "KY", "NM", "OH", "VA", "WA", "IN", "MO", "NY", "OK",
      "MS", "SD", "WI", "MI", "IA", "ND", "AL", "OR", "NE", "KS", "MN", "AR", "FL", "SC", "MT", "CO"),
    "_city" -> strs("Midway", "Fairview", "Oak Grove", "Five Points", "Pleasant Hill", "Riverside",
      "Centerville", "Union"),
    "_county" -> strs("Williamson County", "Ziebach County", "Walker County", "Richland County",
      "Bronx County", "Franklin Parish", "Daviess County", "Barrow County", "Luce County",
      "Fairfield County", "Orange County", "Jackson County"),
    "_country" -> strs("United States"),
    "cd_gender" -> strs("M", "F"),
    "cd_marital_status" -> strs("M", "S", "D", "W", "U"),
    "cd_education_status" -> strs("Primary", "Secondary", "College", "2 yr Degree", "4 yr Degree",
      "Advanced Degree", "Unknown"),
    "cd_credit_rating" -> strs("Good", "High Risk", "Low Risk", "Unknown"),
    "hd_buy_potential" -> strs(">10000", "5001-10000", "1001-5000", "501-1000", "0-500", "Unknown"),
    "s_store_name" -> strs("ese", "ought", "able", "bar", "anti", "cally", "eing", "ation"),
    "_company_name" -> strs("Unknown", "pri", "able", "ought"),
    "p_channel" -> strs("N", "Y"),
    "sm_type" -> strs("EXPRESS", "NEXT DAY", "OVERNIGHT", "REGULAR", "LIBRARY", "TWO DAY"),
    "sm_carrier" -> strs("DHL", "BARIAN", "UPS", "FEDEX", "AIRBORNE", "ZOUROS", "MSC", "LATVIAN"),
    "t_meal_time" -> strs("breakfast", "lunch", "dinner"),
    "c_preferred_cust_flag" -> strs("Y", "N"),
    "c_birth_country" -> strs("UNITED STATES", "CANADA", "MEXICO", "GERMANY", "JAPAN"),
    "c_salutation" -> strs("Mr.", "Mrs.", "Ms.", "Dr.", "Sir", "Miss"),
    "cc_class" -> strs("small", "medium", "large"),
    "cp_type" -> strs("bi-annual", "quarterly", "monthly"),
    "wp_type" -> strs("welcome", "protected", "dynamic", "feedback", "general", "order", "ad"),
    "r_reason_desc" -> strs("reason 28", "reason 22", "Package was damaged", "Stopped working",
      "Did not like the color"),
    "_zip" -> strs("24128", "76232", "65084", "87816", "83926", "77556", "20548", "26231", "43848",
      "15126", "91137", "61265", "98294", "25782", "17920", "18426", "98235", "40081", "84093"),
    "web_name" -> strs("site_0", "site_1", "site_2"),
    "cc_name" -> strs("NY Metro", "Mid Atlantic", "North Midwest", "California"),
    "w_warehouse_name" -> strs("Conventional childr", "Important issues liv", "Doors canno",
      "Bad cards must make.", "Operations"))

  private def sqlString(s: String) = "'" + s.replace("'", "''") + "'"

  private def oneOf(h: String, xs: Seq[String]) =
    s"element_at(array(${xs.map(sqlString).mkString(", ")}), cast($h as int) % ${xs.size} + 1)"

  /** A value for each column of `table` over row number `id`; `sale` holds
   *  the sales row a returns row copies its keys from. */
  private def column(table: String, f: StructField, first: Boolean): String = {
    val n = f.name
    val raw = CharVarcharUtils.getRawType(f.metadata).getOrElse(f.dataType)
    def h(salt: Int) = s"pmod(xxhash64(id, ${sqlString(n)}, $salt), 1000000007)"
    val value: String = if (table == "date_dim") dateDim(n) else if (table == "time_dim") timeDim(n) else {
      val key = dims.collectFirst { case (suffix, d) if n.endsWith(suffix) => d }
      (key, raw) match {
        case (_, _) if first && n.endsWith("_sk") => "id + 1"
        case (Some("date_dim"), _) if factDate(table, n) =>
          // one day a month, 1998-2002: few partitions per fact table
          s"2450815 + ${dayOfMonthSet(h(1))}"
        case (Some("date_dim"), _) => s"2450815 + cast(${h(1)} % 2192 as int)"
        case (Some("time_dim"), _) => s"cast(${h(1)} % 1440 as int) * 60"
        case (Some(d), _) => s"cast(${h(1)} % ${sizes(d)} as int) + 1"
        case (_, _: StringType | _: CharType | _: VarcharType) if n.endsWith("_id") =>
          // business keys: unique, but for items (two versions of each, as in dsdgen)
          s"concat('AAAAAAAA', cast(${if (table == "item") "id / 2" else "id"} as bigint))"
        case (_, _: StringType | _: CharType | _: VarcharType) =>
          domains.collectFirst { case (k, xs) if n == k || n.endsWith(k) || n.startsWith(k) => xs } match {
            case Some(xs) => oneOf(h(2), xs)
            // names, descriptions: many values, so that ORDER BY ... LIMIT rarely ties
            case None => s"concat(${sqlString(n.takeWhile(_ != '_') + "_")}, cast(${h(2)} % 5000 as string))"
          }
        case (_, _: DecimalType) => s"${h(3)} % 30000 / 100.0"
        case (_, IntegerType | LongType) if n.endsWith("_number") || n.endsWith("_id") =>
          s"cast(id / 3 as int) + 1"
        case (_, IntegerType | LongType) if n.contains("quantity") || n.contains("count") => s"${h(4)} % 100 + 1"
        case (_, IntegerType | LongType) if n.endsWith("_year") => s"1998 + ${h(4)} % 6"
        case (_, IntegerType | LongType) => s"${h(4)} % 100"
        case (_, DateType) => s"date_add(date'1998-01-01', cast(${h(5)} % 2192 as int))"
        case (_, _) => s"${h(6)} % 100"
      }
    }
    val typed = raw match {
      case CharType(len) => s"substr(cast($value as string), 1, $len)"
      case VarcharType(len) => s"substr(cast($value as string), 1, $len)"
      case t => s"cast($value as ${t.sql})"
    }
    // keys and dates stay set; everything else is null in about 1 row of 25
    if (first || table == "date_dim" || table == "time_dim" || factDate(table, n)) typed
    else s"if(${h(7)} % 25 = 0, null, $typed)"
  }

  private def factDate(table: String, col: String) =
    TpcdsSchema.partitionColumns.get(table).exists(_.exists(_.replace("`", "") == col))

  /** the day number (from 1998-01-01) of one day in each month of 1998-2002 */
  private def dayOfMonthSet(h: String) =
    s"datediff(make_date(1998 + cast($h % 5 as int), cast($h / 5 % 12 as int) + 1, " +
      s"cast(($h % 5 * 3 + $h / 5 % 12 * 7) % 28 as int) + 1), date'1998-01-01')"

  private def dateDim(n: String): String = {
    val d = "date_add(date'1998-01-01', cast(id as int))"
    n match {
      case "d_date_sk" => "2450815 + id"
      case "d_date_id" => s"concat('AAAA', cast(id as string))"
      case "d_date" => d
      case "d_month_seq" => s"(year($d) - 1900) * 12 + month($d) - 1"
      case "d_week_seq" => s"cast((id + 5114 * 7) / 7 as int)"
      case "d_quarter_seq" => s"(year($d) - 1900) * 4 + quarter($d) - 1"
      case "d_year" | "d_fy_year" => s"year($d)"
      case "d_dow" => s"dayofweek($d) - 1"
      case "d_moy" => s"month($d)"
      case "d_dom" => s"dayofmonth($d)"
      case "d_qoy" => s"quarter($d)"
      case "d_fy_quarter_seq" => s"(year($d) - 1900) * 4 + quarter($d) - 1"
      case "d_fy_week_seq" => s"cast((id + 5114 * 7) / 7 as int)"
      case "d_day_name" => s"date_format($d, 'EEEE')"
      case "d_quarter_name" => s"concat(cast(year($d) as string), 'Q', cast(quarter($d) as string))"
      case "d_holiday" | "d_following_holiday" => s"if(dayofmonth($d) = 25, 'Y', 'N')"
      case "d_weekend" => s"if(dayofweek($d) in (1, 7), 'Y', 'N')"
      case "d_first_dom" => s"2450815 + datediff(trunc($d, 'MM'), date'1998-01-01')"
      case "d_last_dom" => s"2450815 + datediff(last_day($d), date'1998-01-01')"
      case "d_same_day_ly" => "2450815 + id - 365"
      case "d_same_day_lq" => "2450815 + id - 91"
      case _ => "'N'" // d_current_day, _week, _month, _quarter, _year
    }
  }

  private def timeDim(n: String): String = n match {
    case "t_time_sk" | "t_time" => "id * 60"
    case "t_time_id" => "concat('T', cast(id as string))"
    case "t_hour" => "cast(id / 60 as int)"
    case "t_minute" => "cast(id % 60 as int)"
    case "t_second" => "0"
    case "t_am_pm" => "if(id < 720, 'AM', 'PM')"
    case "t_shift" => "element_at(array('first', 'second', 'third'), cast(id / 480 as int) + 1)"
    case "t_sub_shift" => "element_at(array('night', 'morning', 'afternoon', 'evening'), cast(id / 360 as int) + 1)"
    case "t_meal_time" =>
      "case when id between 420 and 599 then 'breakfast' when id between 660 and 839 then 'lunch' " +
        "when id between 1020 and 1199 then 'dinner' end"
    case _ => "0"
  }

  /** Creates the 24 tables (as Spark's TPCDSBase: USING parquet, fact tables
   *  PARTITIONED BY their date key) under `dir` and fills them, unless a
   *  previous run did; registers them in the session either way. */
  def create(spark: SparkSession, dir: File): Unit = {
    val done = new File(dir, "_complete")
    val fill = !done.isFile
    if (fill) org.apache.spark.network.util.JavaUtils.deleteRecursively(dir)
    val tables = TpcdsSchema.columns.keys.toSeq.sorted
    // sales before their returns
    val order = tables.filterNot(returnsOf.contains) ++ tables.filter(returnsOf.contains)
    for (t <- order) {
      spark.sql(s"DROP TABLE IF EXISTS $t")
      val parts = TpcdsSchema.partitionColumns.get(t)
        .map(cs => s"PARTITIONED BY (${cs.mkString(", ")})").getOrElse("")
      val loc = new File(dir, t).getAbsolutePath
      spark.sql(s"CREATE TABLE $t (${TpcdsSchema.columns(t)}) USING parquet $parts LOCATION '$loc'")
      if (fill) insert(spark, t)
      else if (parts.nonEmpty) spark.sql(s"ALTER TABLE $t RECOVER PARTITIONS")
    }
    if (fill) java.nio.file.Files.write(done.toPath, "ok".getBytes(StandardCharsets.UTF_8))
  }

  private def insert(spark: SparkSession, t: String): Unit = {
    val fields = spark.table(t).schema.fields.toSeq
    val source = returnsOf.get(t) match {
      case None => s"range(0, ${sizes(t)}, 1, 1)"
      case Some(sales) =>
        // one sales row in ten comes back: a returns row shares its keys
        val p = sales.takeWhile(_ != '_') match { case "store" => "ss"; case "catalog" => "cs"; case _ => "ws" }
        s"(SELECT row_number() OVER (ORDER BY ${p}_item_sk, ${keyCol(p)}) AS id, * FROM $sales " +
          s"WHERE pmod(hash(${p}_item_sk, ${keyCol(p)}), 10) = 0)"
    }
    val exprs = fields.zipWithIndex.map { case (f, i) =>
      val fromSale = returnsOf.get(t).flatMap(_ => saleKey(t, f.name))
      s"${fromSale.getOrElse(column(t, f, first = i == 0 && !returnsOf.contains(t) && f.name.endsWith("_sk")))} AS `${f.name}`"
    }
    spark.sql(s"INSERT INTO $t SELECT ${exprs.mkString(", ")} FROM $source")
  }

  private def keyCol(p: String) = p match { case "ss" => "ss_ticket_number"; case _ => s"${p}_order_number" }

  /** the returns columns that copy their sales row */
  private def saleKey(t: String, col: String): Option[String] = {
    val (r, s) = t match {
      case "store_returns" => ("sr", "ss")
      case "catalog_returns" => ("cr", "cs")
      case _ => ("wr", "ws")
    }
    val suffix = col.stripPrefix(r + "_")
    suffix match {
      case "item_sk" => Some(s"${s}_item_sk")
      case "ticket_number" => Some("ss_ticket_number")
      case "order_number" => Some(s"${s}_order_number")
      case "customer_sk" if t == "store_returns" => Some("ss_customer_sk")
      case "refunded_customer_sk" | "returning_customer_sk" if t != "store_returns" =>
        Some(s"${s}_bill_customer_sk")
      case "returned_date_sk" => Some(s"${s}_sold_date_sk + 7")
      case "store_sk" => Some("ss_store_sk")
      case "return_quantity" => Some(s"cast(${s}_quantity / 2 as int)")
      case _ => None
    }
  }

  /** the queries of Spark's TPC-DS suites, as (name, text): v1.4 `q1` ..,
   *  v2.7 `v2_7/q5a` .., modified `modified/q3` .. */
  lazy val queries: Seq[(String, String)] = {
    def read(folder: String, prefix: String): Seq[(String, String)] = {
      val url = getClass.getClassLoader.getResource(folder + "/")
      require(url != null && url.getProtocol == "jar", s"$folder/ is not in the spark-sql tests jar")
      val jar = url.openConnection().asInstanceOf[java.net.JarURLConnection].getJarFile
      val names = jar.entries().asScala.map(_.getName)
        .filter(n => n.startsWith(folder + "/") && n.endsWith(".sql")).toSeq
      names.map { p =>
        val base = p.stripPrefix(folder + "/").stripSuffix(".sql")
        (prefix + base, TestSpark.resource(p).getOrElse(""))
      }.sortBy { case (name, _) => (name.filter(_.isDigit).toIntOption.getOrElse(0), name) }
    }
    read("tpcds", "") ++ read("tpcds-v2.7.0", "v2_7/") ++ read("tpcds-modifiedQueries", "modified/")
  }
}
